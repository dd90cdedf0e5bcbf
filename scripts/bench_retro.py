"""Retrospective quality: does the model's lesson name the trap, or does the fallback stand in?

    python scripts/bench_retro.py                              # one task per trap family
    python scripts/bench_retro.py --per-family 2 --model openai:gpt-4o-mini --out OUT

For each selected trap task (examples/traps), a real two-round trajectory is built without the
loop: round 1 is the task's reference solution with its family's trap helpers swapped for the
naive ones (examples/traps/_naive), round 2 the reference itself. Both really run in the
sandbox with the task's check; the feedback is the loop's own (`agent.checks.execute`: classified,
with the input evidence of a crash), the diff between the
rounds is the real fix. The retrospective then writes its lesson from that trajectory, as it
does after a loop run that failed once and then passed.

Per case: whether the model's analysis was used or the marked deterministic fallback was
stored (and why), whether root cause + fix name the family's root cause (a regular
expression per family, written before any output was seen: a coarse, automatic proxy, so
the lessons are also written to the JSON for a person to read), tokens and seconds. The
deterministic draft of the same trajectory is scored too, as the baseline the model must
beat.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from agent.candidate import Candidate
from agent.checks import execute
from agent.container import Limits
from agent.feedback import Feedback
from agent.llm.base import LLM, Usage
from agent.result import RoundRecord, RunResult
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from memory.types import LessonDraft
from retrospectives.extract import Retrospective
from scripts._benchlib import REPO, discover_tasks, family_of, write_json_atomic

TRAPS = REPO / "examples" / "traps"
NAIVE = TRAPS / "_naive"
HELPERS_BLOCK = re.compile(
    r"^# --- trap helpers: (?P<family>\w+) ---\n.*?^# --- end trap helpers ---$",
    re.MULTILINE | re.DOTALL,
)
# What a lesson must mention to name each family's root cause (case-insensitive).
ROOT_CAUSE = {
    "currency": r"currency|symbol|\$|€|£|thousands?[ -]separator",
    "decimal_comma": r"decimal comma|comma as (the )?decimal|decimal separator|locale|europe",
    "percent": r"percent|%",
    "bom": r"\bbom\b|byte[ -]order|utf-8-sig|\\ufeff|ufeff",
    "latin1": r"latin|cp1252|windows-1252|iso-8859|encoding",
    "semicolon": r"semicolon|delimiter",
    "dates": r"time ?zone|utc|offset|date formats?|mixed formats?",
    "headers": r"whitespace|spaces?|upper ?case|lower ?case|case[- ]insensitive|normali[sz]e",
    "missing": r"empty|missing|n/a|blank|null",
    "duplicates": r"duplicate|repeated|twice|dedup",
    "booleans": r"yes|\by/n\b|boolean|truthy",
    "jsonl": r"missing keys?|absent|optional|\.get\(",
}


class Case(BaseModel):
    model_config = ConfigDict(frozen=True)

    task_id: str
    family: str
    feedback: str  # what the retrospective saw as the failure (compressed)
    model_used: bool
    fallback: str | None
    names_cause: bool  # the model's (or fallback's) root cause + fix match ROOT_CAUSE
    baseline_names_cause: bool  # the deterministic draft of the same trajectory
    root_cause: str
    fix: str
    applies_when: str
    tokens: int
    seconds: float


class RetroReport(BaseModel):
    model: str
    cases: list[Case]
    model_used_rate: float
    names_cause_rate: float
    baseline_names_cause_rate: float
    tokens: int
    seconds: float


def with_naive_helpers(reference: str) -> tuple[str, str]:
    """(family, solution): a trap reference with its careful helpers swapped for the naive
    ones of examples/traps/_naive, i.e. the obvious program that falls into the trap."""
    block = HELPERS_BLOCK.search(reference)
    if block is None:
        raise ValueError("reference/solution.py has no trap helpers block")
    naive = (NAIVE / f"{block['family']}.py").read_text(encoding="utf-8")
    return block["family"], reference[: block.start()] + naive + reference[block.end() :]


def trajectory(task: Task, sandbox: Sandbox) -> RunResult:
    """Naive helpers (round 1, fails on the trap) then the reference (round 2, passes)."""
    assert task.task_dir is not None and task.check is not None
    reference = (task.task_dir / "reference" / "solution.py").read_text(encoding="utf-8")
    _, failing = with_naive_helpers(reference)
    rounds = []
    for n, body in ((1, failing), (2, reference)):
        files = {"solution.py": body}
        feedback = execute(task, files, sandbox=sandbox)  # what the loop's check says
        rounds.append(_round(n, Candidate(files=files, text=body), feedback))
    if rounds[0].feedback.passed or not rounds[1].feedback.passed:
        raise SystemExit(f"{task.id}: expected naive to fail and reference to pass")
    return RunResult(
        run_id=f"retro-{task.id}", task_id=task.id, scope=task.scope, goal=task.goal,
        passed=True, stop_reason="passed", rounds=tuple(rounds), best_round=2, unresolved=(),
        usage=Usage(), seconds=0.0,
    )  # fmt: skip


def _round(n: int, candidate: Candidate, feedback: Feedback) -> RoundRecord:
    return RoundRecord(
        round=n, action="generate" if n == 1 else "refine", candidate=candidate,
        checks=(feedback,), usage=Usage(), seconds=0.0,
    )  # fmt: skip


def names_cause(family: str, draft: LessonDraft) -> bool:
    return re.search(ROOT_CAUSE[family], f"{draft.root_cause} {draft.fix}", re.I) is not None


def evaluate(task: Task, run: RunResult, llm: LLM) -> Case:
    family = family_of(task)
    t0 = time.monotonic()
    outcome = Retrospective(llm).analyse(run)
    seconds = time.monotonic() - t0
    (baseline,) = Retrospective(None).analyse(run).drafts
    # A solved two-round run yields exactly one lesson about round 1's failure.
    draft = outcome.drafts[0]
    return Case(
        task_id=task.id, family=family, feedback=run.rounds[0].feedback.compressed(),
        model_used=not outcome.fallbacks,
        fallback=outcome.fallbacks[0] if outcome.fallbacks else None,
        names_cause=names_cause(family, draft),
        baseline_names_cause=names_cause(family, baseline),
        root_cause=draft.root_cause, fix=draft.fix, applies_when=draft.applies_when,
        tokens=outcome.usage.total_tokens, seconds=round(seconds, 2),
    )  # fmt: skip


def select(per_family: int, task_dirs: Sequence[Path]) -> list[Task]:
    chosen: dict[str, list[Task]] = {}
    for path in discover_tasks(task_dirs):
        task = load_task(path)
        if family_of(task) in ROOT_CAUSE:
            group = chosen.setdefault(family_of(task), [])
            if len(group) < per_family:
                group.append(task)
    return [task for group in chosen.values() for task in group]


def run_bench(tasks: Sequence[Task], llm: LLM, sandbox: Sandbox, console: Console) -> RetroReport:
    cases: list[Case] = []
    for task in tasks:
        case = evaluate(task, trajectory(task, sandbox), llm)
        cases.append(case)
        mark = "model" if case.model_used else "fallback"
        console.print(
            f"{case.task_id:<28} {mark:<8} cause {'yes' if case.names_cause else 'no ':<3} "
            f"{case.tokens:>5} tok {case.seconds:6.1f} s  {case.root_cause[:70]}"
        )
    n = max(len(cases), 1)
    return RetroReport(
        model=llm.model_id,
        cases=cases,
        model_used_rate=sum(c.model_used for c in cases) / n,
        names_cause_rate=sum(c.names_cause for c in cases) / n,
        baseline_names_cause_rate=sum(c.baseline_names_cause for c in cases) / n,
        tokens=sum(c.tokens for c in cases),
        seconds=round(sum(c.seconds for c in cases), 1),
    )


def print_report(report: RetroReport, console: Console) -> None:
    table = Table(title=f"retrospective quality ({report.model}, {len(report.cases)} cases)")
    for header in ("", "rate"):
        table.add_column(header)
    table.add_row("model's analysis used (no fallback)", f"{report.model_used_rate:.2f}")
    table.add_row("lesson names the root cause", f"{report.names_cause_rate:.2f}")
    table.add_row("deterministic draft names it", f"{report.baseline_names_cause_rate:.2f}")
    console.print(table)
    console.print(f"{report.tokens} tokens, {report.seconds:.0f} s in the retrospective")


def main(argv: Sequence[str] | None = None) -> int:
    from agent.app.settings import Settings
    from agent.llm.resolve import resolve_llm

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("task_dirs", nargs="*", type=Path, default=[TRAPS])
    p.add_argument("--model", default="local")
    p.add_argument("--per-family", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("bench-results") / "bench_retro.json")
    a = p.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 160)
    llm = resolve_llm(a.model, Settings.from_env(model=a.model))
    tasks = select(a.per_family, a.task_dirs)
    report = run_bench(tasks, llm, Sandbox(Limits(cpu_s=60)), console)
    print_report(report, console)
    write_json_atomic(a.out, report.model_dump(mode="json"))
    console.print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
