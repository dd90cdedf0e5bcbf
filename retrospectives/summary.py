"""The process-level summary of a multi-round run: what cost the rounds, what worked, what first.

Shown with the run (`lessonloop run` prints it, `--json` carries it), not stored as a lesson.
It used to be one, of error type "process": its advice was the costliest failure's verified
fix, which that failure's own lesson already holds, and its symptom was the task's goal,
which resembles the goal of every sibling task. On the learning stream
(scripts/bench_learning.py examples/traps, the 1.5B) it took the seed slot of both later CSV
tasks, one of which then failed where the run without memory passed (README).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from agent.result import RunResult
from retrospectives.facts import FailureStep


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


class ProcessSummary(BaseModel):
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
        """A few lines for the CLI (`lessonloop run`)."""
        lines = [
            f"{self.rounds} rounds, {'passed' if self.passed else 'not solved'}",
            f"cost the most rounds: {self.costliest}",
            f"what worked: {self.what_worked}",
            f"first, next time: {self.first_next_time}",
        ]
        return "\n".join(lines)


def summarise(
    result: RunResult, steps: Sequence[FailureStep], advice: Mapping[str, Advice]
) -> ProcessSummary | None:
    """The summary of a run with at least two rounds and one failure; else None (a round-1
    sample's repair teaches its lesson, but there is no process across rounds to sum up).

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
        word = (scene.split(maxsplit=1) or [""])[0]
        # "Functions ..." and "A CSV ...", not "CSV ...", "I/O ..." or "I ...".
        if word[1:] == word[1:].lower() and word != "I":
            scene = scene[:1].lower() + scene[1:]
        first = f"when {scene}: {top_advice.fix}"
    else:
        first = f"check for {top.identity} before the first attempt"
    return ProcessSummary(
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
    change = last.fix_note or last.change or "a rewrite"
    return f"round {last.fixed_in}: {change}"
