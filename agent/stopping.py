"""When to stop refining: one rule set shared by ReflectiveAgent and run_with_reflection."""

from __future__ import annotations

from collections.abc import Sequence

from agent.feedback import Feedback
from agent.rank import next_base
from agent.result import RoundRecord, StopReason

UNREADABLE_CRITIC = "the critic's verdict could not be parsed"


def decide_stop(
    last: Feedback,
    *,
    rounds: int,
    repaired: Feedback | None,
    siblings: Sequence[Feedback] = (),
    upcoming: Feedback | None = None,
    max_rounds: int,
    score_threshold: float,
    has_external_check: bool,
    found_new: bool = False,
) -> StopReason | None:
    """Given the last round's verdict, return why to stop, or None to go on.

    `rounds`: how many ran; `repaired`: the verdict of the candidate the last round repaired
    (None: the last round was a generation); `siblings`: the verdicts of earlier repairs of
    that same candidate (the loop went back to it); `upcoming`: the verdict the next round
    would repair (default `last`; `agent.rank.next_base` may go back to an earlier round).
    A stall is a repair that failed as what it repaired did, or as an earlier repair of the
    same candidate (with no go-back: the same failure twice in a row). `found_new`: the last round
    also drew a candidate that failed in a way no earlier candidate did (a round's search
    checks several); the search is still moving, so a repeated best is no stall yet.
    """
    if last.passed:
        return "passed"
    if not has_external_check and last.score is not None and last.score >= score_threshold:
        return "score_threshold"
    if rounds >= max_rounds:
        return "max_rounds"
    if not actionable(upcoming or last):
        return "no_actionable_issue"
    seen = {v.signature() for v in (*siblings, *([repaired] if repaired else []))}
    if last.signature() in seen and not found_new:
        return "stall"
    return None


def stop_after(
    rounds: Sequence[RoundRecord],
    *,
    max_rounds: int,
    score_threshold: float,
    has_external_check: bool,
    found_new: bool,
) -> StopReason | None:
    """`decide_stop` for a run's rounds so far: the last one, what it repaired, the earlier
    repairs of that round, and the round the next one would repair."""
    last = rounds[-1]
    base = last.base_round
    return decide_stop(
        last.feedback,
        rounds=len(rounds),
        repaired=rounds[base - 1].feedback if base else None,
        siblings=[r.feedback for r in rounds[:-1] if base and r.base_round == base],
        upcoming=next_base(rounds).feedback,
        max_rounds=max_rounds,
        score_threshold=score_threshold,
        has_external_check=has_external_check,
        found_new=found_new,
    )


def actionable(feedback: Feedback) -> bool:
    """Is there concrete evidence of a defect the refiner could act on?"""
    if feedback.kind != "critic_rejected":
        return True
    if feedback.key_message == UNREADABLE_CRITIC:
        return False
    # Minimal intervention: a rejection that names no issue is no evidence, so no rewrite.
    return bool(feedback.issues)
