"""Assemble a run from settings and carry it through memory: the API behind `lessonloop run`.

    start_run (the run is registered) -> seed/reflection recall -> loop -> finish_run (the
    outcome settles every recalled lesson's use: helped / misled) -> retrospective -> lessons
    written -> lift -> a consolidation pass when `consolidate_every` lessons wait for one

This is the one place that turns configuration into objects, and the one owner of a run's
lifecycle in memory (`start_run`, `finish_run`); the CLI only calls it.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.app.settings import Settings
from agent.container import Limits
from agent.llm.base import LLM, Usage
from agent.llm.resolve import resolve_llm
from agent.loop import LoopConfig, Observer, ReflectiveAgent
from agent.result import RunResult, RunSummary, UsageSummary
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from memory import Embedder, Memory, missing_store
from memory.embeddings import resolve_embedder
from memory.errors import MemoryConfigError
from memory.types import AddAction, AddResult, NullRecall
from retrospectives.consolidate import ConsolidationReport
from retrospectives.extract import Retrospective
from retrospectives.learn import AutoConsolidation
from retrospectives.learn import learn as learn_from_run
from retrospectives.summary import ProcessSummary

_log = logging.getLogger(__name__)


def why_no_lesson(run: RunResult) -> str:
    """Why a run stored no lesson, for people (`lessonloop run`, the demo's verdict)."""
    if not run.passed:
        return "the task was not solved, so no fix was verified: an unsolved run stores no advice"
    if len(run.attempts) == 1:
        return "it passed at the first attempt: there was no mistake to learn from"
    return (
        "it passed after a failure, but the change that fixed it gave no lesson (no code "
        "change, or a failure that is not evidence of a defect)"
    )


class SessionResult(BaseModel):
    """A run plus what the memory did with it."""

    model_config = ConfigDict(frozen=True)

    run: RunResult
    lessons: tuple[AddResult, ...] = ()
    retro_fallbacks: tuple[str, ...] = ()
    retro_usage: Usage = Usage()
    # What the rounds cost and what worked (a solved run of two rounds or more).
    process: ProcessSummary | None = None
    consolidation: ConsolidationReport | None = None  # the pass this run triggered, if any

    def summary(self) -> SessionSummary:
        """The run's summary plus what memory did: `lessonloop run --json`."""
        consolidation = self.consolidation
        return SessionSummary(
            **dict(self.run.summary()),
            lessons_written=tuple(
                LessonWritten(
                    id=a.lesson.id if a.lesson else None, action=a.action, reason=a.reason
                )
                for a in self.lessons
            ),
            retrospective_fallbacks=self.retro_fallbacks,
            retrospective_usage=UsageSummary.of(self.retro_usage),
            process=self.process,
            consolidation=None
            if consolidation is None
            else ConsolidationSummary(
                new_lessons=consolidation.new_lessons,
                merges=tuple(m.id for m in consolidation.merges),
                usage=UsageSummary.of(consolidation.usage),
            ),
        )


class LessonWritten(BaseModel):
    """What the memory did with one lesson draft of the run."""

    model_config = ConfigDict(frozen=True)

    id: str | None
    action: AddAction
    reason: str


class ConsolidationSummary(BaseModel):
    """The consolidation pass a run triggered."""

    model_config = ConfigDict(frozen=True)

    new_lessons: int
    merges: tuple[str, ...]
    usage: UsageSummary  # the merges' canonical text and the judge: the teacher's, if any


class SessionSummary(RunSummary):
    """`RunSummary` plus the memory's side of the run."""

    lessons_written: tuple[LessonWritten, ...]
    retrospective_fallbacks: tuple[str, ...]
    # The retrospective's model calls (the --retro-model teacher's, else the worker's); not
    # in `usage`, which counts the loop. An automatic consolidation's are in its own usage.
    retrospective_usage: UsageSummary
    process: ProcessSummary | None
    consolidation: ConsolidationSummary | None


def open_memory(
    settings: Settings,
    embedder: Embedder | None = None,
    *,
    existing: bool = False,
    reembed: bool = False,
) -> Memory:
    """The configured store: `settings.memory` (path or SQLAlchemy URL), default ~/.lessonloop.

    The embedder of `settings.embedder` (MiniLM by default) unless another one is given.
    `existing`: a command that only reads or edits lessons refuses a configured local path
    (`--memory` or LESSONLOOP_MEMORY; a `sqlite:///` URL too) where no store is: a typo
    would otherwise answer from a new, empty store and leave it there. The default store
    is made on first use either way. `reembed`: convert a store built with another
    embedder (every lesson embedded again).
    """
    given = settings.memory
    problem = missing_store(given) if existing and given is not None else None
    if problem is not None:
        raise MemoryConfigError(
            f"{problem}: check the path (`lessonloop run` and "
            "`lessonloop lessons import` create one)"
        )
    location = given or str(settings.home / "memory")
    return Memory.open(
        location,
        embedder=embedder or resolve_embedder(settings.embedder),
        chroma_url=settings.chroma_url,
        reembed=reembed,
    )


def run_task(
    task_dir: Path,
    settings: Settings,
    *,
    memory: Memory | None,
    llm: LLM | None = None,
    observer: Observer | None = None,
    learn: bool = True,
) -> SessionResult:
    """Run one task directory; with a memory, recall lessons and learn from the outcome."""
    task = load_task(task_dir)
    model = llm or resolve_llm(settings.model, settings)
    teacher = model if settings.retro_model is None else resolve_llm(settings.retro_model, settings)
    agent = ReflectiveAgent(
        model,
        recall=memory if memory is not None else NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=max(1, int(task.timeout_s)))),
        config=LoopConfig(
            max_rounds=settings.max_rounds,
            score_threshold=settings.score_threshold,
            pool_size=settings.pool_size,
            first_pool=settings.first_pool,
            token_budget=settings.token_budget,
            reduce_budget=settings.reduce_budget,
        ),
        runs_dir=settings.runs_dir,
        observer=observer,
    )
    auto = (
        AutoConsolidation(every=settings.consolidate_every, llm=teacher)
        if settings.consolidate_every
        else None
    )
    return run_with_memory(
        agent,
        task,
        memory,
        retro_llm=teacher if learn else None,
        learn=learn,
        consolidation=auto,
    )


def start_run(memory: Memory, task: Task, run_id: str) -> None:
    """Register the run before the loop starts, so the lessons it recalls count against it."""
    memory.record_run(run_id, task_id=task.id, goal=task.goal, scope=task.scope)


def finish_run(memory: Memory, result: RunResult) -> None:
    """Store the run's outcome: each lesson it was given gets `helped` or `misled` (lift);
    a lesson a lesson-free candidate outranked (`RunResult.outranked_lesson_ids`) gets
    `misled` even when the run then passed.

    Registers the run first if `start_run` was not called (a loop run outside a session).
    """
    memory.record_run(result.run_id, task_id=result.task_id, goal=result.goal, scope=result.scope)
    memory.finish_run(
        result.run_id,
        result.passed,
        rounds=len(result.rounds),
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        misled_ids=result.outranked_lesson_ids,
    )


def run_with_memory(
    agent: ReflectiveAgent,
    task: Task,
    memory: Memory | None,
    *,
    retro_llm: LLM | None,
    learn: bool = True,
    consolidation: AutoConsolidation | None = None,
) -> SessionResult:
    """Run `task` with `agent`, then record the outcome and (if `learn`) the new lessons.

    With `consolidation` (and `learn`), a pass follows once enough lessons wait for one.
    """
    run_id = uuid.uuid4().hex[:12]
    if memory is None:
        result = agent.run(task, run_id=run_id)
    else:
        start_run(memory, task, run_id)
        result = _run_or_abort(agent, task, memory, run_id)
    _write_run_dir(result)
    if memory is None:
        return SessionResult(run=result)
    finish_run(memory, result)
    if not learn:
        return SessionResult(run=result)
    report = learn_from_run(
        result,
        memory=memory,
        retrospective=Retrospective(retro_llm),
        consolidation=consolidation,
    )
    return SessionResult(
        run=result,
        lessons=report.added,
        retro_fallbacks=report.retro.fallbacks,
        retro_usage=report.retro.usage,
        process=report.retro.summary,
        consolidation=report.consolidation,
    )


def _run_or_abort(agent: ReflectiveAgent, task: Task, memory: Memory, run_id: str) -> RunResult:
    """`agent.run`; a run that raises (a crashed model, Ctrl-C) is recorded as ended without
    an outcome, so it does not read as running forever, and the error goes on up."""
    try:
        return agent.run(task, run_id=run_id)
    except BaseException as exc:
        why = f"{type(exc).__name__}: {exc}".rstrip(": ")
        try:
            memory.abort_run(run_id, why)
        except Exception:  # the store may be what failed: the run's own error matters more
            _log.warning("could not record run %s as aborted", run_id, exc_info=True)
        raise


def _write_run_dir(result: RunResult) -> None:
    """Keep the whole trajectory and the best candidate's files next to the check logs."""
    if result.run_dir is None:
        return
    result.run_dir.mkdir(parents=True, exist_ok=True)
    (result.run_dir / "trajectory.json").write_text(result.model_dump_json(indent=2))
    (result.run_dir / "summary.json").write_text(result.summary().model_dump_json(indent=2))
    best = result.run_dir / "best"
    for name, content in result.best.files.items():
        target = best / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
