"""The search inside a refinement round: which candidates to draw, and how to rank them.

`plan_draws` says which draws a round makes and in what order; `rank_feedback` orders
candidates by their verdicts; `Pool` holds what a round drew and spent. The loop
(`agent.loop`) does the drawing and checking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.llm.base import Usage
from agent.result import CandidateOrigin, PoolEntry

if TYPE_CHECKING:
    from agent.loop import LoopConfig

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


def plan_draws(
    cfg: LoopConfig, *, has_output: bool, has_runner_up: bool
) -> list[tuple[CandidateOrigin, float]]:
    """The draws of one refinement round, in order; repeats are skipped, not counted.

    Hot refiner samples come before the fresh generation: measured on the 1.5B model from
    one failing round, 3 of 4 hot refiner samples passed and 0 of 2 fresh generations.
    The fresh one stays for failures the refiner is anchored on. With a runner-up from
    the last round, every other hot sample repairs it instead of the best: the best by
    rank can be a dead end (a program that hides its error and writes zeros outranks one
    that crashed further into the data), and the runner-up is often one fix away.
    """
    hot = cfg.resample_temperature
    fresh = cfg.pool_size >= 3 and has_output
    hots = cfg.pool_size - 1 - fresh + cfg.resample_attempts
    alternate = has_runner_up
    samples: list[tuple[CandidateOrigin, float]] = [
        ("refine_alt" if alternate and i % 2 == 0 else "refine_hot", hot) for i in range(hots)
    ]
    plan: list[tuple[CandidateOrigin, float]] = [("refine", cfg.temperature)]
    cut = cfg.pool_size - 1 - fresh
    plan.extend(samples[:cut])
    if fresh:
        plan.append(("fresh", hot))
    plan.extend(samples[cut:])
    return plan


@dataclass
class Pool:
    """The candidates of one refinement round so far, and what the round spent."""

    drawn: list[tuple[Candidate, tuple[Feedback, ...], Usage]] = field(default_factory=list)
    entries: list[PoolEntry] = field(default_factory=list)
    wasted: Usage = field(default_factory=Usage)  # repeats and replies without files
    repeats: int = 0

    @property
    def passed(self) -> bool:
        return bool(self.drawn) and self.drawn[-1][1][-1].passed

    @property
    def tokens(self) -> int:
        return self.wasted.total_tokens + sum(d[2].total_tokens for d in self.drawn)


def rank_feedback(verdict: Feedback) -> tuple[bool, int, int, float, float, int]:
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
