"""Assemble a run from settings and carry it through memory: the API behind `lessonloop run`.

    seed/reflection recall -> loop -> retrospective -> lessons written -> run outcome (lift)
    -> a consolidation pass when `consolidate_every` lessons wait for one

This is the one place that turns configuration into objects; the CLI only calls it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.llm.base import LLM, Usage
from agent.llm.resolve import resolve_llm
from agent.loop import LoopConfig, Observer, ReflectiveAgent
from agent.result import RunResult
from agent.sandbox import Limits, Sandbox
from agent.settings import Settings
from agent.task import Task, load_task
from memory import Embedder, Memory
from memory.embeddings import resolve_embedder
from memory.types import AddResult, NullRecall
from retrospectives.consolidate import ConsolidationReport
from retrospectives.extract import Retrospective
from retrospectives.learn import AutoConsolidation
from retrospectives.learn import learn as learn_from_run


class SessionResult(BaseModel):
    """A run plus what the memory did with it."""

    model_config = ConfigDict(frozen=True)

    run: RunResult
    lessons: tuple[AddResult, ...] = ()
    retro_fallbacks: tuple[str, ...] = ()
    retro_usage: Usage = Usage()
    consolidation: ConsolidationReport | None = None  # the pass this run triggered, if any

    def summary(self) -> dict[str, object]:
        data = self.run.summary()
        data["lessons_written"] = [
            {"id": a.lesson.id if a.lesson else None, "action": a.action, "reason": a.reason}
            for a in self.lessons
        ]
        data["retrospective_fallbacks"] = list(self.retro_fallbacks)
        data["consolidation"] = (
            None
            if self.consolidation is None
            else {
                "new_lessons": self.consolidation.new_lessons,
                "merges": [m.id for m in self.consolidation.merges],
            }
        )
        return data


def open_memory(settings: Settings, embedder: Embedder | None = None) -> Memory:
    """The configured store: `settings.memory` (path or SQLAlchemy URL), default ~/.lessonloop.

    The embedder of `settings.embedder` (MiniLM by default) unless another one is given.
    """
    location = settings.memory or str(settings.home / "memory")
    return Memory.open(
        location,
        embedder=embedder or resolve_embedder(settings.embedder),
        chroma_url=settings.chroma_url,
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
            token_budget=settings.token_budget,
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
    if memory is not None:
        # Registered first so the lessons the loop recalls are recorded against this run.
        memory.record_run(run_id, task_id=task.id, goal=task.goal, scope=task.scope)
    result = agent.run(task, run_id=run_id)
    _write_run_dir(result)
    if memory is None:
        return SessionResult(run=result)
    if not learn:
        memory.finish_run(
            run_id,
            result.passed,
            rounds=len(result.rounds),
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
        )
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
        consolidation=report.consolidation,
    )


def _write_run_dir(result: RunResult) -> None:
    """Keep the whole trajectory and the best candidate's files next to the check logs."""
    if result.run_dir is None:
        return
    result.run_dir.mkdir(parents=True, exist_ok=True)
    (result.run_dir / "trajectory.json").write_text(result.model_dump_json(indent=2))
    (result.run_dir / "summary.json").write_text(json.dumps(result.summary(), indent=2))
    best = result.run_dir / "best"
    for name, content in result.best.files.items():
        target = best / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
