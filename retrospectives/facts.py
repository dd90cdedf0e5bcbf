"""The deterministic part of a retrospective: what the trajectory itself proves, no model.

From a `RunResult` we read every failure the run hit (grouped by kind + error type, from
the real traceback/check output in `Feedback`), whether the passing candidate descends from
a candidate that showed it (the rounds each refinement repaired, `RoundRecord.base_round`),
the bounded unified diff between that candidate and the passing one, and the refiner's own
"Root cause:"/"Fix:" lines. The model only adds interpretation on top.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.result import RunResult
from agent.stopping import actionable
from memory.marks import INPUT_LABEL
from memory.matchtext import drop_readings
from memory.redact import redact
from memory.types import ERROR_TYPE_MAX_CHARS
from retrospectives.change import diff_summary

_ROOT_CAUSE_LINE = re.compile(r"^\W*root cause\W*[:：]\s*(.+)$", re.IGNORECASE | re.MULTILINE)


class FailureStep(BaseModel):
    """One kind of failure in a run: where it showed, what it cost, what made it go away."""

    model_config = ConfigDict(frozen=True)

    feedback: Feedback  # the last occurrence: the freshest evidence
    rounds: tuple[int, ...]
    tokens: int
    # The passing round, when it descends from a candidate that showed this failure; None:
    # never resolved (or only on a line of repairs the loop went back from).
    fixed_in: int | None
    diff: str = ""
    # The verified change in one line (`change.diff_summary`), taken from a whole-file diff
    # with whole-file context: which lines tell most depends on all the code each side has.
    change: str = ""
    fix_note: str | None = None
    # The refiner's own "Root cause:" line of the fixing round, when it wrote one.
    stated_cause: str | None = None

    @property
    def resolved(self) -> bool:
        """True when the passing candidate descends from one that showed this failure."""
        return self.fixed_in is not None

    @property
    def identity(self) -> str:
        """Kind plus error type: what counts as "the same failure" across rounds."""
        return failure_identity(self.feedback)


# Context lines enough for any program: the diff then carries both programs whole.
WHOLE = 1_000_000


def failure_identity(feedback: Feedback) -> str:
    """ "runtime_error/KeyError", "check_failed": rounds sharing it show the same failure."""
    return feedback.kind + (f"/{feedback.error_type}" if feedback.error_type else "")


def lesson_error_type(feedback: Feedback) -> str:
    """The error type a lesson is filed under: the exception name, else the feedback kind.

    The loop's reflection recall filters on both (`error_type`, `kind`), so either matches.
    """
    return (feedback.error_type or feedback.kind)[:ERROR_TYPE_MAX_CHARS]


def failure_steps(result: RunResult, *, diff_max_lines: int = 40) -> list[FailureStep]:
    """Every actionable failure of the run, in order of first appearance.

    A critic verdict that could not be read, or a rejection naming no issue, is no evidence
    of a defect and yields no step.
    """
    # In order; a round-1 draw that a hot sample of the same round repaired comes first.
    rounds = result.attempts
    groups: dict[str, list[int]] = {}
    for at, record in enumerate(rounds):
        verdict = record.feedback
        if verdict.passed or not actionable(verdict) or _format_slip(verdict):
            continue
        groups.setdefault(failure_identity(verdict), []).append(at)
    # Only a candidate that passed shows what fixed a failure: a later round that merely
    # failed differently (a KeyError swallowed by try/except) taught nothing worth keeping.
    passed_at = next((at for at, r in enumerate(rounds) if r.feedback.passed), None)
    passing = rounds[passed_at] if passed_at is not None else None
    line = line_of(result, passed_at)
    # For the failure the passing candidate repaired, the change shown is the reduced one
    # (`agent.reduce`: what the pass did not need taken back, a handler that skips rows, a
    # debug print; it passed too). The reduction is relative to that candidate only: for
    # an earlier failure it may have undone what a later round removed.
    reduced = None
    if passing is not None and result.verified_files and passing.round == result.best_round:
        reduced = passing.candidate.model_copy(update={"files": result.verified_files})
    steps: list[FailureStep] = []
    for positions in groups.values():
        records = [rounds[at] for at in positions]
        # The pass fixed a failure only on its own line of repairs: a round the loop went
        # back from (`agent.rank.next_base`) was fixed by nothing that came after it.
        fixed_at = [at for at in positions if at in line]
        at = fixed_at[-1] if fixed_at else positions[-1]
        last = rounds[at]
        # The attempt that repaired this one: on the line, else the first that tried.
        following = line.get(at) or next(
            (k for k, r in enumerate(rounds) if k > at and r.base_round == last.round), None
        )
        nxt = rounds[following] if following is not None else None
        repaired = bool(fixed_at)
        after = passing if repaired else None
        fixed = after.candidate if after is not None else None
        # What the lesson tells as the change: the failure's own fix when the pass had one
        # (`agent.transplant`), else the whole (reduced) change.
        told = fixed
        if fixed is not None and last.candidate.digest() == result.verified_base:
            fixed = told = reduced or fixed
            if result.failure_fix is not None:
                told = fixed.model_copy(update={"files": result.failure_fix})
        steps.append(
            FailureStep(
                feedback=last.feedback,
                rounds=tuple(dict.fromkeys(r.round for r in records)),
                tokens=sum(r.usage.total_tokens for r in records),
                fixed_in=after.round if after is not None else None,
                diff=candidate_diff(last.candidate, fixed, diff_max_lines)
                if fixed is not None
                else "",
                change=diff_summary(candidate_diff(last.candidate, told, None, WHOLE))
                if told is not None
                else "",
                fix_note=after.candidate.fix_note if after is not None else None,
                stated_cause=stated_cause(nxt.candidate.text) if nxt is not None else None,
            )
        )
    return steps


def line_of(result: RunResult, passed_at: int | None) -> dict[int, int]:
    """The attempts (positions in `result.attempts`) the passing one descends from, each with
    the position of the attempt that repaired it: the rounds each refinement repaired
    (`RoundRecord.base_round`; its `repaired` record when it repaired that round's runner-up),
    back to a generation; a round-1 sample that passed repaired `first_failure`. Empty when
    nothing passed."""
    rounds = result.attempts
    position = {id(r): at for at, r in enumerate(rounds)}
    where = {r.round: position[id(r)] for r in result.rounds}  # each round's chosen record
    line: dict[int, int] = {}
    at = passed_at
    while at is not None:
        base, other = rounds[at].base_round, rounds[at].repaired
        if other is not None:  # it repaired the runner-up (or bare line) of round `base`
            line[position[id(other)]] = at
            at = position[id(other)]
        elif base is not None and where.get(base, at) < at:
            line[where[base]] = at
            at = where[base]
        elif at > 0 and result.first_failure is not None and rounds[0] is result.first_failure:
            line[0] = at
            at = None
        else:
            at = None
    return line


def _format_slip(feedback: Feedback) -> bool:
    """A rule check found no output file: the model broke the answer format, not the task."""
    return feedback.stage == "rule" and feedback.kind == "check_failed"


def candidate_diff(
    before: Candidate, after: Candidate, max_lines: int | None = 40, context: int = 1
) -> str:
    """Unified diff (`context` lines of it) between two redacted candidates, cut at
    `max_lines` lines (None: whole). Whole files are redacted before they are split: a
    secret over several lines (a PEM key) matches only whole."""
    lines: list[str] = []
    if before.files or after.files:
        for name in sorted(set(before.files) | set(after.files)):
            old, new = redact(before.files.get(name, "")), redact(after.files.get(name, ""))
            lines.extend(
                difflib.unified_diff(
                    old.splitlines(),
                    new.splitlines(),
                    f"a/{name}",
                    f"b/{name}",
                    n=context,
                    lineterm="",
                )
            )
    else:
        lines.extend(
            difflib.unified_diff(
                redact(before.text).splitlines(),
                redact(after.text).splitlines(),
                "a",
                "b",
                n=context,
                lineterm="",
            )
        )
    if max_lines is not None and len(lines) > max_lines:
        cut = len(lines) - max_lines
        lines = [*lines[:max_lines], f"... ({cut} more diff lines)"]
    return "\n".join(line[:200] for line in lines)


def stated_cause(reply: str) -> str | None:
    """The "Root cause: ..." line a refiner reply starts with, if any."""
    match = _ROOT_CAUSE_LINE.search(reply)
    return match.group(1).strip()[:300] if match else None


def symptom_of(feedback: Feedback, *, limit: int = 300) -> str:
    """What was observed, in the words of the check: kind, error type, place, message, and
    where the failing value sits in the input (else the failing line of code).

    The input's side travels to other tasks (a BOM in a header, "$4,332.59" in a column);
    the failing line names this task's own variables. The symptom is what the indexes see.
    """
    text = feedback.kind.replace("_", " ")
    if feedback.error_type:
        text += f" {feedback.error_type}"
    if feedback.location:
        text += f" at {feedback.location}"
    detail = feedback.key_message or (feedback.issues[0] if feedback.issues else "")
    if not detail and feedback.summary.strip():
        detail = feedback.summary.strip().splitlines()[0]
    if detail:
        text += f": {detail}"
    if feedback.input_evidence:
        text += f" ({INPUT_LABEL}{feedback.input_evidence})"
    elif feedback.failing_example:
        text += f" (failing example: {feedback.failing_example})"
    # Redact before clipping: a secret cut in half no longer matches the redaction patterns.
    # Without the evidence's readings (in the evidence and in an issue quoting it): their
    # length goes to the values, and no half reading is left by the clip.
    return _clip(redact(" ".join(drop_readings(text).split())), limit)


def excerpt_of(feedback: Feedback, rounds: Sequence[int], *, limit: int = 300) -> str:
    """A short log excerpt for the evidence: the rounds and the compressed check output."""
    where = "round " + ", ".join(str(r) for r in rounds)
    return _clip(redact(f"{where}: " + " | ".join(feedback.compressed().splitlines())), limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
