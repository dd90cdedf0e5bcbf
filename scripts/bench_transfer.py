"""Lesson transfer through the product path: a lesson learned on task A, task B's first round.

    python scripts/bench_transfer.py                        # every trap family, k = 2
    python scripts/bench_transfer.py --families currency bom --k 4 --model local

For each trap family with two tasks A and B (examples/traps):
  1. task A's real fail-then-pass trajectory (naive helpers, then the reference; both run in
     the sandbox, as in bench_retro) goes through the real retrospective with the model;
     the lessons it writes go into a fresh store through `Memory.add` (redaction, dedup);
  2. task B runs one round of the real loop (seed recall -> generator -> sandboxed check),
     greedy once and k times at temperature 0.8, with that store and with no memory.
First-round pass rate with vs without the lesson, whether recall found it, and the lesson
itself are printed and written to JSON. This isolates what the loop's search cannot hide:
does a lesson written from a verified fix make the model get a sibling task right at once?
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from agent.container import Limits
from agent.feedback import Feedback
from agent.llm.base import LLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from memory import Memory
from memory.embeddings import MiniLMEmbedder
from memory.types import NullRecall, Recall
from retrospectives.extract import Retrospective
from scripts._benchlib import discover_tasks, family_of, write_json_atomic
from scripts.bench_retro import TRAPS, trajectory


class Case(BaseModel):
    """One family: the lesson from A and B's first-round results with and without it."""

    model_config = ConfigDict(frozen=True)

    family: str
    task_a: str
    task_b: str
    lesson: str
    recalled: int  # samples of B (with memory) whose seed recall returned the lesson
    samples: int
    passed_with: int
    passed_without: int
    tokens_with: int
    tokens_without: int
    # Each sample's verdict (greedy first): "success" or the failure's kind and message, so
    # the table can say whether B failed on the trap or on ordinary logic.
    outcomes_with: tuple[str, ...]
    outcomes_without: tuple[str, ...]
    seconds: float


def pairs(task_dirs: Sequence[Path], families: Sequence[str] | None) -> list[tuple[Task, Task]]:
    """(A, B): the first two tasks of each family, in name order."""
    groups: dict[str, list[Task]] = {}
    for path in discover_tasks(task_dirs):
        task = load_task(path)
        groups.setdefault(family_of(task), []).append(task)
    wanted = families or sorted(groups)
    return [(groups[f][0], groups[f][1]) for f in wanted if len(groups.get(f, [])) >= 2]


class Rounds(BaseModel):
    """Task B's first rounds under one condition: 1 greedy + k hot samples."""

    model_config = ConfigDict(frozen=True)

    passed: int
    tokens: int
    recalled: int  # samples whose seed recall injected something
    outcomes: tuple[str, ...]


def outcome(feedback: Feedback) -> str:
    if feedback.passed:
        return "success"
    # A crash's key message already starts with its exception type.
    return f"{feedback.kind}: {feedback.key_message or feedback.summary}"[:160]


def first_rounds(llm: LLM, task: Task, recall: Recall, sandbox: Sandbox, k: int) -> Rounds:
    passed = tokens = recalled = 0
    outcomes: list[str] = []
    for i in range(k + 1):
        # No control and no round-1 search: each sample is one generation, so the round
        # shows what the lesson does, not the best of several draws.
        temp = 0.0 if i == 0 else 0.8
        config = LoopConfig(max_rounds=1, temperature=temp, seed_control=False, first_pool=1)
        result = ReflectiveAgent(llm, recall=recall, sandbox=sandbox, config=config).run(task)
        passed += result.passed
        tokens += result.usage.total_tokens
        recalled += bool(result.recalled_lesson_ids)
        outcomes.append(outcome(result.rounds[0].feedback))
    return Rounds(passed=passed, tokens=tokens, recalled=recalled, outcomes=tuple(outcomes))


def run_case(a: Task, b: Task, llm: LLM, sandbox: Sandbox, k: int) -> Case:
    started = time.monotonic()
    memory = Memory.in_memory(embedder=MiniLMEmbedder())
    try:
        outcome = Retrospective(llm).analyse(trajectory(a, sandbox))
        for draft in outcome.drafts:
            memory.add(draft.model_copy(update={"scope": b.scope}))
        lesson = " | ".join(f"{d.root_cause} FIX: {d.fix}" for d in outcome.drafts)
        with_lesson = first_rounds(llm, b, memory, sandbox, k)
    finally:
        memory.close()
    without = first_rounds(llm, b, NullRecall(), sandbox, k)
    return Case(
        family=family_of(a), task_a=a.id, task_b=b.id, lesson=lesson,
        recalled=with_lesson.recalled, samples=k + 1,
        passed_with=with_lesson.passed, passed_without=without.passed,
        tokens_with=with_lesson.tokens, tokens_without=without.tokens,
        outcomes_with=with_lesson.outcomes, outcomes_without=without.outcomes,
        seconds=round(time.monotonic() - started, 1),
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    from agent.app.settings import Settings
    from agent.llm.resolve import resolve_llm

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("task_dirs", nargs="*", type=Path, default=[TRAPS])
    p.add_argument("--model", default="local")
    p.add_argument("--families", nargs="*", default=None)
    p.add_argument("--k", type=int, default=2, help="hot samples besides the greedy one")
    p.add_argument("--out", type=Path, default=Path("bench-results") / "bench_transfer.json")
    a = p.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 160)
    llm = resolve_llm(a.model, Settings.from_env(model=a.model))
    sandbox = Sandbox(Limits(cpu_s=60))
    cases: list[Case] = []
    for task_a, task_b in pairs(a.task_dirs, a.families):
        case = run_case(task_a, task_b, llm, sandbox, a.k)
        cases.append(case)
        console.print(
            f"{case.family:<14} {case.task_b:<28} with {case.passed_with}/{case.samples} "
            f"(recalled {case.recalled}) without {case.passed_without}/{case.samples} "
            f"{case.seconds:6.0f} s  lesson: {case.lesson[:90]}"
        )
        for label, outcomes in (("with", case.outcomes_with), ("without", case.outcomes_without)):
            console.print(f"    {label:<8} " + " | ".join(o[:70] for o in outcomes))
        write_json_atomic(a.out, {"model": llm.model_id, "k": a.k, "cases": [
            c.model_dump(mode="json") for c in cases]})  # fmt: skip
    table = Table(title=f"first round of task B, {llm.model_id}")
    for col in ("", "passed", "tokens"):
        table.add_column(col)
    n = sum(c.samples for c in cases)
    table.add_row("with A's lesson", f"{sum(c.passed_with for c in cases)}/{n}",
                  str(sum(c.tokens_with for c in cases)))  # fmt: skip
    table.add_row("without memory", f"{sum(c.passed_without for c in cases)}/{n}",
                  str(sum(c.tokens_without for c in cases)))  # fmt: skip
    console.print(table)
    console.print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
