"""`lessonloop demo`: watch the assistant learn a lesson and use it, from a fresh memory.

    1  task A (a data trap) with memory: it falls into the trap, the loop searches for the
       fix, and the retrospective stores a verified lesson (the code change that worked)
    2  task B (the same trap, other data) with that memory: the lesson is recalled before
       the first generation
    3  task B again without memory: the baseline for the closing comparison

When task A stores no lesson (unsolved, or solved at once) the demo stops after step 1 and
says so: steps 2 and 3 would only compare two runs without a lesson.

Every step is a real run through the public session API (same loop, sandbox, memory and
retrospective as `lessonloop run`); nothing is staged. The report says what happened,
including when the lesson was not recalled or did not help.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.app.session import SessionResult, SessionSummary, open_memory, run_task, why_no_lesson
from agent.app.settings import Settings
from agent.errors import ConfigurationError
from agent.llm.base import LLM
from agent.llm.resolve import resolve_llm
from agent.loop import Observer
from agent.task import load_task
from memory.types import Lesson

# The default pair: one trap family (a byte order mark before the header), two tasks with
# different data and goals. Chosen on the bundled 1.5B (README, "Status"): the loop solves
# task A and the lesson's code is right for task B as written. The currency pair's task A is
# solved too, but its lesson strips '$' where task B's amounts carry '€'.
DEFAULT_TASKS = ("bom_02_inventory", "bom_01_payroll")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traps"


class DemoStep(BaseModel):
    """One run of the demo and what the memory did with it."""

    model_config = ConfigDict(frozen=True)

    label: str
    task_dir: Path
    with_memory: bool
    result: SessionResult
    lessons_stored: tuple[Lesson, ...] = ()
    lessons_recalled: tuple[Lesson, ...] = ()

    def summary(self) -> DemoStepSummary:
        return DemoStepSummary(
            **dict(self.result.summary()),
            label=self.label,
            task=self.task_dir.name,
            with_memory=self.with_memory,
            lessons_stored=self.lessons_stored,
            lessons_recalled=tuple(lesson.id for lesson in self.lessons_recalled),
        )


class DemoStepSummary(SessionSummary):
    """One step of `lessonloop demo --json`: the run's summary (as `run --json` prints it),
    which step it was, the lessons it stored and the ids of those it recalled."""

    label: str
    task: str
    with_memory: bool
    lessons_stored: tuple[Lesson, ...]
    lessons_recalled: tuple[str, ...]


class DemoSummary(BaseModel):
    """`lessonloop demo --json`: the store, the verdict and every step's summary."""

    model_config = ConfigDict(frozen=True)

    memory: str
    learned: bool
    verdict: str
    steps: tuple[DemoStepSummary, ...]


class DemoReport(BaseModel):
    """The three steps and the verdict read off them."""

    model_config = ConfigDict(frozen=True)

    memory: str
    steps: tuple[DemoStep, ...]

    @property
    def learned(self) -> bool:
        """A verified lesson was stored in step 1 and recalled in step 2."""
        if len(self.steps) < 2:
            return False
        stored = {lesson.id for lesson in self.steps[0].lessons_stored}
        return bool(stored & {lesson.id for lesson in self.steps[1].lessons_recalled})

    @property
    def verdict(self) -> str:
        first = self.steps[0]
        if not first.lessons_stored:
            return f"task A stored no lesson: {why_no_lesson(first.result.run)}"
        if not self.learned:
            return "a lesson was stored, but task B did not recall it"
        a, b = self.steps[1].result.run, self.steps[2].result.run
        return (
            f"with the lesson: {'passed' if a.passed else 'failed'} in {len(a.rounds)} round(s), "
            f"{a.usage.total_tokens} tokens; without: {'passed' if b.passed else 'failed'} in "
            f"{len(b.rounds)} round(s), {b.usage.total_tokens} tokens"
        )

    def summary(self) -> DemoSummary:
        return DemoSummary(
            memory=self.memory,
            learned=self.learned,
            verdict=self.verdict,
            steps=tuple(step.summary() for step in self.steps),
        )


StepHook = Callable[[str, Path, bool], None]


def demo_tasks(tasks: tuple[Path, Path] | None) -> tuple[Path, Path]:
    """The two task directories (given, or the default pair from examples/traps), each
    loaded once here so a typo fails before minutes of task A, not after."""
    if tasks is not None:
        for task_dir in tasks:
            load_task(task_dir)
        return tasks
    found = tuple(EXAMPLES / name for name in DEFAULT_TASKS)
    missing = [str(p) for p in found if not (p / "task.toml").is_file()]
    if missing:
        raise ConfigurationError(
            f"demo tasks not found: {', '.join(missing)}; run from a source checkout "
            "(pip install -e .) or pass two task directories: lessonloop demo TASK_A TASK_B"
        )
    return found[0], found[1]


def run_demo(
    settings: Settings,
    *,
    tasks: tuple[Path, Path] | None = None,
    llm: LLM | None = None,
    observer: Observer | None = None,
    on_step: StepHook | None = None,
    memory: str | None = None,
) -> DemoReport:
    """Run the three steps on a fresh memory: `memory` if given, else the demo's own store
    under `settings.home / "demo"`, emptied first and kept afterwards for inspection.

    `settings.memory` (e.g. LESSONLOOP_MEMORY, the assistant's real store) is never used:
    the demo must not mix its lessons into a memory someone relies on.
    """
    first, second = demo_tasks(tasks)
    model = llm or resolve_llm(settings.model, settings)
    if memory is None:
        own = settings.home / "demo"
        shutil.rmtree(own, ignore_errors=True)
        memory = str(own / "memory")
    settings = settings.model_copy(update={"memory": memory})
    location = memory
    store = open_memory(settings)
    try:
        plan = (
            ("1. task A, fresh memory", first, True),
            ("2. task B, with what task A taught", second, True),
            ("3. task B, without memory", second, False),
        )
        steps: list[DemoStep] = []
        for label, task_dir, with_memory in plan:
            if on_step is not None:
                on_step(label, task_dir, with_memory)
            result = run_task(
                task_dir,
                settings,
                memory=store if with_memory else None,
                llm=model,
                observer=observer,
            )
            stored = tuple(
                store.get(a.lesson.id)
                for a in result.lessons
                if a.lesson is not None and a.action == "created"
            )
            recalled = tuple(store.get(i) for i in result.run.recalled_lesson_ids)
            steps.append(
                DemoStep(
                    label=label,
                    task_dir=task_dir,
                    with_memory=with_memory,
                    result=result,
                    lessons_stored=stored,
                    lessons_recalled=recalled,
                )
            )
            if not stored and len(steps) == 1:
                break  # nothing was learned: task B would only repeat the baseline
    finally:
        store.close()
    return DemoReport(memory=location, steps=tuple(steps))
