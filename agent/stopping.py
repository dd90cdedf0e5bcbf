"""When to stop refining: one rule set shared by ReflectiveAgent and run_with_reflection."""

from __future__ import annotations

from collections.abc import Sequence

from agent.feedback import Feedback
from agent.result import StopReason

UNREADABLE_CRITIC = "the critic's verdict could not be parsed"


def decide_stop(
    verdicts: Sequence[Feedback],
    *,
    max_rounds: int,
    score_threshold: float,
    has_external_check: bool,
    found_new: bool = False,
) -> StopReason | None:
    """Given the verdict of every round so far, return why to stop, or None to go on.

    A stall is the same failure twice in a row. `found_new`: the last round also drew a
    candidate that failed in a way no earlier candidate did (a round's search checks
    several); the search is still moving, so a repeated best is no stall yet.
    """
    last = verdicts[-1]
    if last.passed:
        return "passed"
    if not has_external_check and last.score is not None and last.score >= score_threshold:
        return "score_threshold"
    if len(verdicts) >= max_rounds:
        return "max_rounds"
    if not actionable(last):
        return "no_actionable_issue"
    if len(verdicts) >= 2 and verdicts[-2].signature() == last.signature() and not found_new:
        return "stall"
    return None


def actionable(feedback: Feedback) -> bool:
    """Is there concrete evidence of a defect the refiner could act on?"""
    if feedback.kind != "critic_rejected":
        return True
    if feedback.key_message == UNREADABLE_CRITIC:
        return False
    # Minimal intervention: a rejection that names no issue is no evidence, so no rewrite.
    return bool(feedback.issues)
