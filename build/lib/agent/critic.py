"""The critic's verdict, parsed strictly: a pass needs a passing verdict AND no issue left."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from agent.feedback import Feedback
from agent.stopping import UNREADABLE_CRITIC

# An "issue" that only says there is no issue. Anything longer ("no major gaps, but day 3
# lacks a budget", "None of the totals are rounded") is a real issue.
_EMPTY_ISSUE = re.compile(
    r"^\s*(?:none|no|n/?a|nil|nothing|-+|—|ok|no issues?(?: found)?|no problems?(?: found)?"
    r"|no (?:major |remaining |outstanding )?(?:issues|problems|gaps|concerns)"
    r"|nothing to (?:fix|report|improve)|无|没有|无问题|没有问题|暂无)\s*[.!。！]?\s*$",
    re.IGNORECASE,
)
# Sentences of a passing verdict's feedback that still name a problem.
_PROBLEM_MARKERS = re.compile(
    r"\b(?:but|however|although|except|missing|lacks?|lacking|fails?|wrong|incorrect|"
    r"should|needs? to|does not|doesn't|not (?:rounded|handled|included))\b|但|不过|缺少|缺",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?。！？;；])\s+|\n+")


class Critique(BaseModel):
    """What the critic returns (JSON schema for structured output)."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    score: int = Field(ge=1, le=10)
    feedback: str
    issues: list[str]


def remaining_issues(critique: Critique) -> tuple[str, ...]:
    """Issues that really name a problem, including ones hidden in a passing feedback text."""
    issues = [i.strip() for i in critique.issues if i.strip() and not _EMPTY_ISSUE.match(i)]
    if critique.passed and not issues:
        issues.extend(
            s.strip()
            for s in _SENTENCE.split(critique.feedback)
            if s.strip() and _PROBLEM_MARKERS.search(s)
        )
    return tuple(issues)


def critique_feedback(critique: Critique) -> Feedback:
    """Turn a parsed critique into Feedback; success only under the strict rule."""
    issues = remaining_issues(critique)
    passed = critique.passed and not issues
    return Feedback(
        kind="success" if passed else "critic_rejected",
        stage="critic",
        summary=critique.feedback.strip()[:500] or ("accepted" if passed else "rejected"),
        key_message=issues[0] if issues else None,
        issues=issues,
        score=float(critique.score),
    )


def unreadable_critique(raw: str, reason: str) -> Feedback:
    """An unparseable critic answer is a failed check with its own feedback, never a pass."""
    return Feedback(
        kind="critic_rejected",
        stage="critic",
        summary=f"critic output unreadable: {reason}"[:300],
        key_message=UNREADABLE_CRITIC,
        issues=("critic verdict unreadable (not evidence of a defect)",),
        failing_example=raw.strip()[:200] or None,
    )
