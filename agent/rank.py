"""How good a verdict is, and which round a run follows.

`rank_feedback` orders candidates (within a round's search, and the run's rounds: its best
round, and the round the next refinement repairs, `next_base`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.feedback import Feedback
from agent.result import RoundRecord

STAGE_RANK = {"rule": 0, "execution": 1, "critic": 2}
# How far a failing program got: ran and was judged wrong > crashed > did not parse.
KIND_RANK = {
    "syntax_error": 0,
    "timeout": 1,
    "resource_error": 1,
    "runtime_error": 2,
    "check_failed": 3,
    "critic_rejected": 3,
    "success": 4,
}


# How good a verdict is, compared as a tuple (see `rank_feedback`).
Rank = tuple[bool, int, int, float, float, int]


def rank_feedback(verdict: Feedback) -> Rank:
    """Orders candidates: passed, stage reached, how far the program got, partial credit,
    critic score, fewer issues. Higher is better."""
    return (
        verdict.passed,
        STAGE_RANK[verdict.stage] + (1 if verdict.passed else 0),
        KIND_RANK.get(verdict.kind, 0),
        verdict.credit or 0.0,
        verdict.score or 0.0,
        -len(verdict.issues),
    )


def next_base(rounds: Sequence[RoundRecord]) -> RoundRecord:
    """The round the next refinement repairs: the last, unless an earlier one strictly
    outranks it (the latest on a tie). A round whose every draw did worse than the one it
    repaired is no line to follow: in the 1.5B junk stream 3 of 30 runs fell from a close
    program (bom_04: 83 % credit) to programs that wrote nothing, then repaired those."""
    return max(reversed(rounds), key=lambda r: rank_feedback(r.feedback))


def best_round(rounds: Sequence[RoundRecord]) -> RoundRecord:
    """The run's best round; on a tie the earlier round wins: it cost less to reach."""
    return max(rounds, key=lambda r: (rank_feedback(r.feedback), -r.round))
