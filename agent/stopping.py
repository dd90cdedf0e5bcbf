"""When to stop refining: one rule set shared by ReflectiveAgent and run_with_reflection."""

from __future__ import annotations

from agent.feedback import Feedback
from agent.result import StopReason

UNREADABLE_CRITIC = "the critic's verdict could not be parsed"


def decide_stop(
    last: Feedback,
    *,
    rounds: int,
    repaired: Feedback | None,
    upcoming: Feedback | None = None,
    max_rounds: int,
    score_threshold: float,
    has_external_check: bool,
    found_new: bool = False,
) -> StopReason | None:
    """Given the last round's verdict, return why to stop, or None to go on.

    `rounds`: how many ran; `repaired`: the verdict of the candidate the last round repaired
    (None: the last round was a generation); `upcoming`: the verdict the next round would
    repair (default `last`; `agent.rank.next_base` may go back to an earlier round).
    A stall is a repair that failed as what it repaired did. `found_new`: the last round
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
    if repaired is not None and repaired.signature() == last.signature() and not found_new:
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
