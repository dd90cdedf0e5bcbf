"""After a finished run: write the lessons, update lift, maybe trigger consolidation.

This is what `lessonloop run` calls once `ReflectiveAgent.run` returned and the run's outcome
is stored (`agent.app.session.finish_run`, the owner of the run lifecycle):

    report = learn(result, memory=memory, retrospective=Retrospective(llm))

Order matters: the outcome must be stored first (so recalled lessons got helped/misled;
`learn` refuses an unfinished run), then drafts are added (redacted, deduplicated,
recall-loop guarded by the memory), then the lessons the run recalled are re-scored (a
candidate that just helped becomes validated), and last, if enough lessons wait for one, a
consolidation pass runs (`AutoConsolidation`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from agent.llm.base import LLM
from agent.result import RunResult
from memory.errors import LessonNotFoundError
from memory.store import Memory
from memory.types import AddResult
from retrospectives.consolidate import ConsolidationConfig, ConsolidationReport, Consolidator
from retrospectives.errors import ConsolidationBusyError, UnfinishedRunError
from retrospectives.extract import RetroOutcome, Retrospective
from retrospectives.lift import LiftPolicy, LiftReport, apply_lift


class LearnReport(BaseModel):
    """What learning from one run did."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    retro: RetroOutcome
    added: tuple[AddResult, ...]
    lift: LiftReport
    consolidation: ConsolidationReport | None = None  # the pass this run triggered, if any

    @property
    def created_ids(self) -> tuple[str, ...]:
        """Ids of lessons this run created (not folded into existing ones, not rejected)."""
        return tuple(a.lesson.id for a in self.added if a.action == "created" and a.lesson)


@dataclass(frozen=True)
class AutoConsolidation:
    """The store-side trigger: a pass once `every` lessons wait for one.

    "Waiting" is read from SQL (active lessons no pass has processed yet, see
    `Memory.unprocessed_count`), not counted in this process, so lessons
    written by separate `lessonloop run` processes add up, and a pass from any source
    (`lessonloop consolidate`, the worker, this trigger) resets the count.
    """

    every: int
    llm: LLM | None  # writes the canonicals; None: the deterministic fallback
    config: ConsolidationConfig | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError("every must be >= 1")


def maybe_consolidate(memory: Memory, auto: AutoConsolidation) -> ConsolidationReport | None:
    """Run one pass if at least `auto.every` lessons wait; None if not due or another pass runs."""
    if memory.unprocessed_count() < auto.every:
        return None
    try:
        return Consolidator(memory, llm=auto.llm, config=auto.config).run()
    except ConsolidationBusyError:
        return None  # a pass is already running and will see these lessons


def learn(
    result: RunResult,
    *,
    memory: Memory,
    retrospective: Retrospective,
    policy: LiftPolicy | None = None,
    consolidation: AutoConsolidation | None = None,
) -> LearnReport:
    """Add a finished run's lessons, update the lift of what it recalled.

    With `consolidation`, a pass follows when enough lessons wait for one. Raises
    `UnfinishedRunError` if the run's outcome is not stored yet.
    """
    if not _finished(memory, result.run_id):
        raise UnfinishedRunError(
            f"run {result.run_id} has no stored outcome: finish it first "
            "(agent.app.session.finish_run), so the lessons it recalled are scored"
        )
    outcome = retrospective.analyse(result)
    added = memory.add_many(list(outcome.drafts), run_id=result.run_id)
    recalled = list(result.recalled_lesson_ids)
    lift = apply_lift(memory, policy, lesson_ids=recalled) if recalled else _empty_lift()
    merged = maybe_consolidate(memory, consolidation) if consolidation is not None else None
    return LearnReport(
        run_id=result.run_id,
        retro=outcome,
        added=tuple(added),
        lift=lift,
        consolidation=merged,
    )


def _finished(memory: Memory, run_id: str) -> bool:
    try:
        return memory.get_run(run_id).passed is not None
    except LessonNotFoundError:
        return False


def _empty_lift() -> LiftReport:
    return LiftReport(lifts=(), validated=(), flagged=(), decayed=())
