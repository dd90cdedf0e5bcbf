"""Assemble a run from settings: the one place that turns configuration into objects."""

from __future__ import annotations

from pathlib import Path

from agent.llm.base import LLM
from agent.llm.resolve import resolve_llm
from agent.loop import LoopConfig, Observer, ReflectiveAgent
from agent.result import RunResult
from agent.sandbox import Limits, Sandbox
from agent.settings import Settings
from agent.task import load_task
from memory.types import NullRecall, Recall


def run_task(
    task_dir: Path,
    settings: Settings,
    *,
    recall: Recall | None = None,
    llm: LLM | None = None,
    observer: Observer | None = None,
) -> RunResult:
    """Load a task directory and run it through the loop with the configured model."""
    task = load_task(task_dir)
    agent = ReflectiveAgent(
        llm or resolve_llm(settings.model, settings),
        recall=recall or NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=max(1, int(task.timeout_s)))),
        config=LoopConfig(max_rounds=settings.max_rounds, score_threshold=settings.score_threshold),
        runs_dir=settings.runs_dir,
        observer=observer,
    )
    return agent.run(task)
