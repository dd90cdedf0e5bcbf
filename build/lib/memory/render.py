"""Render recalled lessons as a compact prompt block, and estimate its size in tokens."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memory.types import Lesson, ScoredLesson

HEADER = (
    "Past experience (lessons from earlier tasks; they may not apply here, "
    "use one only if its situation matches):"
)


def estimate_tokens(text: str) -> int:
    """Rough token count (~4 characters per token for English and code); 0 for ''.

    Good enough to keep a prompt block within a budget without loading a tokenizer.
    """
    return math.ceil(len(text) / 4)


def _one_line(text: str) -> str:
    # Lessons are shown one field per line; stray newlines would break the structure.
    return " ".join(text.split())


def render_lesson(index: int, lesson: Lesson) -> str:
    """One numbered lesson: error type, symptom, root cause, fix, and when it applies."""
    lines = [
        f"{index}. [{lesson.error_type}] Symptom: {_one_line(lesson.symptom)}",
        f"   Root cause: {_one_line(lesson.root_cause)}",
        f"   Fix: {_one_line(lesson.fix)}",
    ]
    if lesson.applies_when.strip():
        lines.append(f"   Applies when: {_one_line(lesson.applies_when)}")
    return "\n".join(lines)


def render_lessons(scored: Sequence[ScoredLesson]) -> str:
    """The block handed to the generator/reflector; '' when there is nothing to say."""
    if not scored:
        return ""
    body = [render_lesson(i, s.lesson) for i, s in enumerate(scored, start=1)]
    return "\n".join([HEADER, *body])
