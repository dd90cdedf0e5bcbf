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


# How much of a field survives clipping, relative to the others: the fix (advice and the
# verified change) last, the symptom's tail (its input evidence) and the situation first.
_KEEP = {"symptom": 1.0, "root_cause": 1.5, "fix": 3.0, "applies_when": 0.5}


def _clip(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters, marked with '…'."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def render_lesson(index: int, lesson: Lesson, cap: float | None = None) -> str:
    """One numbered lesson: error type, symptom, root cause, fix, and when it applies; with
    `cap`, each field is clipped to `cap` times its share in `_KEEP`."""
    fields = {name: _one_line(getattr(lesson, name)) for name in _KEEP}
    if cap is not None:
        fields = {name: _clip(text, int(cap * _KEEP[name])) for name, text in fields.items()}
    lines = [
        f"{index}. [{lesson.error_type}] Symptom: {fields['symptom']}",
        f"   Root cause: {fields['root_cause']}",
        f"   Fix: {fields['fix']}",
    ]
    if fields["applies_when"]:
        lines.append(f"   Applies when: {fields['applies_when']}")
    return "\n".join(lines)


def render_lessons(scored: Sequence[ScoredLesson], budget: int | None = None) -> str:
    """The block handed to the generator/reflector; '' when there is nothing to say.

    With a token `budget` the block fits it: when the lessons as written do not, their long
    fields are clipped (`_KEEP`), not dropped (only the header and the field labels, about
    40 tokens for one lesson, are never cut). Recall picks lessons that fit whole, except
    the best one, which is never left out for its length (`memory.recall`).
    """
    if not scored:
        return ""
    block = _block(scored, None)
    if budget is None or estimate_tokens(block) <= budget:
        return block
    low, high = 0, len(block)  # the largest cap that fits
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(_block(scored, mid)) <= budget:
            low = mid
        else:
            high = mid - 1
    return _block(scored, low)


def _block(scored: Sequence[ScoredLesson], cap: float | None) -> str:
    body = [render_lesson(i, s.lesson, cap) for i, s in enumerate(scored, start=1)]
    return "\n".join([HEADER, *body])
