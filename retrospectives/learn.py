"""After a run: settle lesson use, write the lessons, update lift, maybe trigger consolidation.

This is what `lessonloop run` calls once `ReflectiveAgent.run` returned:

    report = learn(result, memory=memory, retrospective=Retrospective(llm))

Order matters: the run's outcome is stored first (so recalled lessons get helped/misled),
then drafts are added (redacted, deduplicated, recall-loop guarded by the memory), then the
lessons the run recalled are re-scored (a candidate that just helped becomes validated).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from agent.result import RunResult
from memory.store import Memory
from memory.types import AddResult
from retrospectives.extract import RetroOutcome, Retrospective
from retrospectives.lift import LiftPolicy, LiftReport, apply_lift


class LearnReport(BaseModel):
    """What learning from one run did."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    retro: RetroOutcome
    added: tuple[AddResult, ...]
    lift: LiftReport
    consolidation_triggered: bool = False

    @property
    def created_ids(self) -> tuple[str, ...]:
        """Ids of lessons this run created (not folded into existing ones, not rejected)."""
        return tuple(a.lesson.id for a in self.added if a.action == "created" and a.lesson)


class ConsolidationTrigger:
    """Runs `action` once every `every` newly created lessons (the store-side hook).

    Thread-safe counter; `action` runs in the caller's thread, so a slow pass delays only
    the call that crossed the threshold. Pass `background=True` to run it in a thread.
    """

    def __init__(
        self, every: int, action: Callable[[], object], *, background: bool = False
    ) -> None:
        if every < 1:
            raise ValueError("every must be >= 1")
        self.every = every
        self.action = action
        self.background = background
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self, created_ids: Sequence[str]) -> bool:
        """Count new lessons; True when this call started a pass."""
        with self._lock:
            self._count += len(created_ids)
            if self._count < self.every:
                return False
            self._count = 0
        if self.background:
            threading.Thread(target=self.action, name="consolidate", daemon=True).start()
        else:
            self.action()
        return True


def learn(
    result: RunResult,
    *,
    memory: Memory,
    retrospective: Retrospective,
    policy: LiftPolicy | None = None,
    trigger: ConsolidationTrigger | None = None,
) -> LearnReport:
    """Record the run's outcome, add its lessons, update the lift of what it recalled."""
    memory.record_run(result.run_id, task_id=result.task_id, goal=result.goal, scope=result.scope)
    memory.finish_run(
        result.run_id,
        result.passed,
        rounds=len(result.rounds),
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
    )
    outcome = retrospective.analyse(result)
    added = memory.add_many(list(outcome.drafts), run_id=result.run_id)
    recalled = list(result.recalled_lesson_ids)
    lift = apply_lift(memory, policy, lesson_ids=recalled) if recalled else _empty_lift()
    report = LearnReport(run_id=result.run_id, retro=outcome, added=tuple(added), lift=lift)
    if trigger is not None and trigger(report.created_ids):
        report = report.model_copy(update={"consolidation_triggered": True})
    return report


def _empty_lift() -> LiftReport:
    return LiftReport(lifts=(), validated=(), flagged=(), decayed=())
