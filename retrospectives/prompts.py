"""Prompts of the retrospective and the consolidator: data, one template per role.

Each template has a render function and a test that renders it (tests/retro/test_prompts.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

LESSON_SYSTEM = """\
You write one lesson from a programming attempt so the same mistake is avoided next time.
Be general: name the kind of input, data or assumption that caused the failure, not this
task's variable names. Keep each field to one or two sentences.
Reply with JSON only, three full sentences about THIS failure, for example (another task):
{"root_cause": "A default list argument is created once and shared by every call.",
 "fix": "Default the argument to None and create a new list inside the function.",
 "applies_when": "Functions that take an optional list or dict argument."}"""

# The example's three sentences: a field that contains one copied the example, whatever it
# adds (measured on the 1.5B: "Functions that take an optional list or dict argument and
# attempt to convert string values to float.").
LESSON_EXAMPLE = (
    "A default list argument is created once and shared by every call.",
    "Default the argument to None and create a new list inside the function.",
    "Functions that take an optional list or dict argument.",
)

LESSON_USER = Template("""\
Task: $goal

What failed (round $rounds):
$failure

$outcome
$tried
Write the lesson now.""")

_FIXED = Template("""\
The change that made this failure go away (unified diff):
$diff
$note""")

MERGE_SYSTEM = """\
You merge lessons that share one root cause into one canonical lesson. Keep every distinct
fix: when lessons fix the same symptom differently, keep each fix with the condition under
which it applies ("if ... then ..."). Do not invent facts that no lesson states.
Reply with JSON only:
{"symptom": "...", "root_cause": "...", "fix": "...", "applies_when": "..."}"""

MERGE_USER = Template("""\
Lessons to merge ($count), all of error type $error_type:

$lessons

Write the canonical lesson now.""")


def render_lesson(
    *,
    goal: str,
    rounds: Sequence[int],
    failure: str,
    diff: str,
    fix_note: str | None,
    tried: Sequence[str],
) -> str:
    """The user turn for one lesson: a failure and the verified change that fixed it."""
    note = f"The attempt's own note on the fix: {fix_note}\n" if fix_note else ""
    outcome = _FIXED.substitute(diff=diff or "(no textual change recorded)", note=note)
    tried_block = ""
    if tried:
        tried_block = "Fixes tried before (in order):\n" + "\n".join(f"- {t}" for t in tried) + "\n"
    return LESSON_USER.substitute(
        goal=goal,
        rounds=", ".join(str(r) for r in rounds),
        failure=failure,
        outcome=outcome,
        tried=tried_block,
    )


def render_merge(error_type: str, lessons: Sequence[tuple[str, str, str, str]]) -> str:
    """The user turn for a merge; `lessons` are (symptom, root_cause, fix, applies_when)."""
    blocks = [
        f"{i}. symptom: {s}\n   root cause: {r}\n   fix: {f}\n   applies when: {a or '-'}"
        for i, (s, r, f, a) in enumerate(lessons, 1)
    ]
    return MERGE_USER.substitute(
        count=len(lessons), error_type=error_type, lessons="\n".join(blocks)
    )


SAME_CAUSE_SYSTEM = """\
You decide whether two lessons from failed programming attempts share one root cause: the
same property of the input or the same wrong assumption, even when the error types, the
wording or the task differ (a thousands separator can surface as a ValueError in one run
and as a wrong total in another). Different properties of the data are different root
causes even when the error looks alike (a comma grouping thousands is not a decimal comma).
Reply with JSON only: {"same": true} or {"same": false}"""

SAME_CAUSE_USER = Template("""\
Lesson A: $first

Lesson B: $second

Do A and B share one root cause?""")


def render_same_cause(first: str, second: str) -> str:
    """The user turn of a pair check; each text is a lesson's root cause and fix."""
    return SAME_CAUSE_USER.substitute(first=first, second=second)
