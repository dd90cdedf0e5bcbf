"""The process-level summary of a multi-round run: what cost the rounds, what worked, what first.

Stored as its own lesson with error type "process" (see `process_draft`), not folded into
the evidence of the trap lessons: evidence is neither embedded nor shown in prompts, so
advice hidden there could never be recalled. A "process" lesson is embedded like any other
and is found by the *seed* recall (goal + files, no error-type filter) before the first
attempt, which is exactly when "what to do first" helps; the reflection recall filters on
the failure's error types and so never sees it mid-run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from agent.result import RunResult
from memory.redact import redact
from memory.types import Evidence, LessonDraft
from retrospectives.facts import FailureStep, diff_summary

PROCESS_ERROR_TYPE = "process"


class FailureCost(BaseModel):
    """What one kind of failure cost the run."""

    model_config = ConfigDict(frozen=True)

    identity: str  # "runtime_error/KeyError"
    rounds: int
    tokens: int
    resolved: bool


class Advice(BaseModel):
    """The interpreted part of a step, from the model or the deterministic fallback."""

    model_config = ConfigDict(frozen=True)

    root_cause: str
    fix: str
    applies_when: str


class RunSummary(BaseModel):
    """What a multi-round run teaches about the process, beyond each single failure."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task_id: str
    goal: str
    scope: str
    passed: bool
    rounds: int
    costs: tuple[FailureCost, ...]  # most expensive first
    costliest: str
    costliest_cause: str = ""
    # The costliest failure was fixed and verified in this run (its advice is known).
    costliest_verified: bool = False
    what_worked: str
    first_next_time: str

    def render(self) -> str:
        """A few lines for the CLI and the run log."""
        lines = [
            f"{self.rounds} rounds, {'passed' if self.passed else 'not solved'}",
            f"cost the most rounds: {self.costliest}",
            f"what worked: {self.what_worked}",
            f"first, next time: {self.first_next_time}",
        ]
        return "\n".join(lines)


def summarise(
    result: RunResult, steps: Sequence[FailureStep], advice: Mapping[str, Advice]
) -> RunSummary | None:
    """The summary of a run with at least two rounds and one failure; else None.

    `advice` maps a step's identity to its interpreted root cause and fix.
    """
    if len(result.rounds) < 2 or not steps:
        return None
    ranked = sorted(steps, key=lambda s: (-len(s.rounds), -s.tokens, s.rounds[0]))
    costs = tuple(
        FailureCost(identity=s.identity, rounds=len(s.rounds), tokens=s.tokens, resolved=s.resolved)
        for s in ranked
    )
    top = ranked[0]
    top_advice = advice.get(top.identity)
    costliest = (
        f"{top.identity} ({len(top.rounds)} of {len(result.rounds)} rounds, {top.tokens} tokens)"
    )
    if top_advice is not None:
        # The model's applies_when often starts with "When ...": not "when When ...".
        scene = top_advice.applies_when.rstrip(".")
        scene = scene[5:] if scene.lower().startswith("when ") else scene
        first = f"when {scene}: {top_advice.fix}"
    else:
        first = f"check for {top.identity} before the first attempt"
    return RunSummary(
        run_id=result.run_id,
        task_id=result.task_id,
        goal=result.goal,
        scope=result.scope,
        passed=result.passed,
        rounds=len(result.rounds),
        costs=costs,
        costliest=costliest,
        costliest_cause=top_advice.root_cause if top_advice is not None else "",
        costliest_verified=top_advice is not None,
        what_worked=_what_worked(result, steps),
        first_next_time=first,
    )


def _what_worked(result: RunResult, steps: Sequence[FailureStep]) -> str:
    if not result.passed:
        tried = [r.candidate.fix_note for r in result.rounds if r.candidate.fix_note]
        if tried:
            return "nothing passed; tried: " + "; ".join(tried[-3:])
        return f"nothing passed; best was round {result.best_round}"
    last = next((s for s in steps if s.fixed_in == len(result.rounds)), None)
    if last is None:
        return f"passed in round {len(result.rounds)}"
    change = last.fix_note or diff_summary(last.diff) or "a rewrite"
    return f"round {last.fixed_in}: {change}"


def process_draft(
    summary: RunSummary, *, injected: Sequence[str], excerpt_chars: int = 300
) -> LessonDraft:
    """The summary as a lesson of error type "process" (always a candidate)."""
    excerpt = redact(f"process: {summary.costliest}; worked: {summary.what_worked}")
    return LessonDraft(
        scope=summary.scope,
        error_type=PROCESS_ERROR_TYPE,
        symptom=_clip(
            f"a task like '{summary.goal}' needed {summary.rounds} rounds; "
            f"most went to {summary.costliest}",
            400,
        ),
        root_cause=_clip(
            f"most rounds went to {summary.costliest}"
            + (f": {summary.costliest_cause}" if summary.costliest_cause else ""),
            500,
        ),
        fix=_clip(summary.first_next_time, 500),
        applies_when=_clip(f"tasks like: {summary.goal}", 300),
        evidence=(Evidence(run_id=summary.run_id, excerpt=excerpt[:excerpt_chars]),),
        status="candidate",
        injected_lesson_ids=tuple(injected),
    )


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
