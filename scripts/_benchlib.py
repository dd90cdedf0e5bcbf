"""Helpers of the benchmark scripts: task discovery, atomic JSON, statistics, curves, tables.

The scripts put the repository root on sys.path themselves, so both `python scripts/x.py`
and `import scripts.x` (the tests) find the packages and this module.
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from agent.llm.base import LLM, Completion, M, Message
from agent.result import RunResult
from agent.task import Task
from scripts._lesson_audit import LessonAudit, audit

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def discover_tasks(paths: Iterable[Path]) -> list[Path]:
    """Task directories under `paths`: each path is a task dir or a tree holding task dirs.

    A task dir is any directory with a task.toml. Directories whose name starts with "." or
    "_" (generators, helpers, caches) are skipped below the given roots. Order: sorted by
    path, duplicates removed, so the same arguments always give the same stream.
    """
    found: dict[Path, None] = {}
    for root in paths:
        root = root.resolve()
        if (root / "task.toml").is_file():
            found[root] = None
            continue
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: not a directory")
        for toml in sorted(root.rglob("task.toml")):
            rel = toml.parent.relative_to(root).parts
            if any(part.startswith((".", "_")) for part in rel):
                continue
            found[toml.parent] = None
    return sorted(found)


def round_robin(items: Sequence[T], key: Callable[[T], str], limit: int | None) -> list[T]:
    """`limit` items taken in turn from each group (by `key`), so a subset covers all groups."""
    if limit is None or limit >= len(items):
        return list(items)
    queues: dict[str, list[T]] = {}
    for item in items:
        queues.setdefault(key(item), []).append(item)
    picked: list[T] = []
    while len(picked) < limit:
        for queue in queues.values():
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


def select_tasks(tasks: Sequence[Task], limit: int | None, per_family: int) -> list[Task]:
    """All tasks, or the first `limit` of: `per_family` tasks of every family (families in
    name order), then the remaining tasks one family at a time.

    Several tasks per family first (not one each), so that a short stream can transfer.
    """
    if limit is None or limit >= len(tasks):
        return list(tasks)
    families: dict[str, list[Task]] = {}
    for task in tasks:
        families.setdefault(family_of(task), []).append(task)
    ranked = sorted(
        ((max(i, per_family - 1), f, task) for f, group in enumerate(families.values())
         for i, task in enumerate(group)),
        key=lambda item: item[:2],
    )  # fmt: skip
    return [task for _, _, task in ranked[:limit]]


def family_of(task: Task) -> str:
    return task.tags[0] if task.tags else task.id


def stream_order(tasks: Sequence[Task], order: int) -> list[Task]:
    """The `order`-th seeded shuffle of the stream (the same on every machine)."""
    shuffled = list(tasks)
    random.Random(f"bench-learning-order-{order}").shuffle(shuffled)
    return shuffled


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON via a temporary file and rename, so a reader (or Ctrl-C) never sees half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False, default=str)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600: results are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Spread(BaseModel):
    """Mean and spread of one figure over repetitions (orders, seeds)."""

    model_config = ConfigDict(frozen=True)

    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    n: int

    def show(self, fmt: str = "{:.2f}") -> str:
        """ "0.62 [0.55-0.70]" or "-" when there is no value."""
        if self.mean is None:
            return "-"
        text = fmt.format(self.mean)
        if self.n > 1 and self.min is not None and self.max is not None and self.min != self.max:
            text += f" [{fmt.format(self.min)}-{fmt.format(self.max)}]"
        return text


def spread(values: Sequence[float | None]) -> Spread:
    """Mean, population std, min and max of the values that are not None."""
    xs = [v for v in values if v is not None]
    if not xs:
        return Spread(mean=None, std=None, min=None, max=None, n=0)
    mean = sum(xs) / len(xs)
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
    return Spread(mean=mean, std=std, min=min(xs), max=max(xs), n=len(xs))


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, or None when the denominator is 0."""
    return numerator / denominator if denominator else None


Condition = Literal["none", "learning", "frozen"]
CONDITIONS: tuple[Condition, ...] = ("none", "learning", "frozen")
Phase = Literal["train", "eval"]


class RunRecord(BaseModel):
    """One task run of one condition at one position of one stream (seed, order)."""

    model_config = ConfigDict(frozen=True)

    condition: Condition
    seed: int
    order: int
    position: int
    phase: Phase
    task_id: str
    family: str
    passed: bool
    first_round_passed: bool
    # Round 1 passed by its control (the generation without seed lessons), not the lessons.
    first_round_by_control: bool = False
    # Round 1 passed by one of its hot samples, not its greedy generation(s).
    first_round_by_sample: bool = False
    rounds: int
    stop_reason: str
    tokens: int
    seconds: float
    retro_tokens: int = 0  # the cost of learning: the retrospective's model calls
    retro_seconds: float = 0.0
    recalled_seed: tuple[str, ...] = ()
    recalled_reflection: tuple[str, ...] = ()
    lessons_created: int = 0
    lessons_merged: int = 0
    lessons_rejected: int = 0
    # True when the result was taken from an identical earlier run (see bench_learning).
    reused: bool = False


class ConditionMetrics(BaseModel):
    """Figures of one condition over a slice of the stream, spread over (seed, order)."""

    model_config = ConfigDict(frozen=True)

    runs: int
    first_round_success: Spread
    first_round_by_control: Spread  # share of runs whose round 1 the control passed
    first_round_by_sample: Spread  # share of runs whose round 1 a hot sample passed
    final_success: Spread
    mean_rounds: Spread
    tokens_per_solved: Spread
    seconds_per_solved: Spread
    retro_tokens_per_solved: Spread
    recall_rate: Spread
    lessons_created: Spread


def _stream_figures(rs: Sequence[RunRecord]) -> dict[str, float | None]:
    solved = sum(r.passed for r in rs)
    return {
        "first_round_success": ratio(sum(r.first_round_passed for r in rs), len(rs)),
        "first_round_by_control": ratio(sum(r.first_round_by_control for r in rs), len(rs)),
        "first_round_by_sample": ratio(sum(r.first_round_by_sample for r in rs), len(rs)),
        "final_success": ratio(solved, len(rs)),
        "mean_rounds": ratio(sum(r.rounds for r in rs), len(rs)),
        "tokens_per_solved": ratio(sum(r.tokens for r in rs), solved),
        "seconds_per_solved": ratio(sum(r.seconds for r in rs), solved),
        "retro_tokens_per_solved": ratio(sum(r.retro_tokens for r in rs), solved),
        "recall_rate": ratio(
            sum(bool(r.recalled_seed or r.recalled_reflection) for r in rs), len(rs)
        ),
        "lessons_created": float(sum(r.lessons_created for r in rs)),
    }


def condition_metrics(records: Sequence[RunRecord]) -> ConditionMetrics:
    """Per-stream figures, then their mean and spread over the streams."""
    streams: dict[tuple[int, int], list[RunRecord]] = {}
    for r in records:
        streams.setdefault((r.seed, r.order), []).append(r)
    per_stream = [_stream_figures(rs) for rs in streams.values()]
    fields = {
        key: spread([f[key] for f in per_stream])
        for key in ConditionMetrics.model_fields
        if key != "runs"
    }
    return ConditionMetrics(runs=len(records), **fields)


class Summary(BaseModel):
    """`whole`: every position of the stream; `eval`: positions after the training split."""

    model_config = ConfigDict(frozen=True)

    whole: dict[str, ConditionMetrics]
    eval: dict[str, ConditionMetrics]


def summarise(records: Sequence[RunRecord]) -> Summary:
    """Metrics per condition; the frozen condition counts only in the eval slice."""
    whole: dict[str, ConditionMetrics] = {}
    evaluation: dict[str, ConditionMetrics] = {}
    for cond in CONDITIONS:
        mine = [r for r in records if r.condition == cond]
        if mine and cond != "frozen":
            whole[cond] = condition_metrics(mine)
        late = [r for r in mine if r.phase == "eval"]
        if late:
            evaluation[cond] = condition_metrics(late)
    return Summary(whole=whole, eval=evaluation)


def _curve(
    records: Sequence[RunRecord], value: str
) -> tuple[list[int], list[float], list[float], list[float]]:
    """Running mean of `value` along the stream: mean, min and max over streams per position."""
    streams: dict[tuple[int, int], list[RunRecord]] = {}
    for r in records:
        streams.setdefault((r.seed, r.order), []).append(r)
    running: list[list[float]] = []
    for rs in streams.values():
        rs = sorted(rs, key=lambda r: r.position)
        total, line = 0.0, []
        for i, r in enumerate(rs, 1):
            total += float(getattr(r, value))
            line.append(total / i)
        running.append(line)
    length = max((len(line) for line in running), default=0)
    xs, mean, low, high = [], [], [], []
    for i in range(length):
        column = [line[i] for line in running if len(line) > i]
        xs.append(i + 1)
        mean.append(sum(column) / len(column))
        low.append(min(column))
        high.append(max(column))
    return xs, mean, low, high


def plot_curves(records: Sequence[RunRecord], split: int | None, path: Path) -> Path:
    """Cumulative success, first-round success and tokens per task along the stream (PNG)."""
    import matplotlib

    matplotlib.use("Agg")  # headless: no display on servers and in CI
    import matplotlib.pyplot as plt

    panels = (
        ("passed", "cumulative success rate"),
        ("first_round_passed", "cumulative first-round success"),
        ("tokens", "tokens per task (running mean)"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    colors = {"none": "tab:gray", "learning": "tab:blue", "frozen": "tab:orange"}
    for ax, (value, title) in zip(axes, panels, strict=True):
        for cond in CONDITIONS:
            mine = [r for r in records if r.condition == cond]
            if not mine:
                continue
            xs, mean, low, high = _curve(mine, value)
            style = "--" if cond == "frozen" else "-"  # frozen = learning before the split
            ax.plot(xs, mean, label=cond, color=colors[cond], linestyle=style)
            ax.fill_between(xs, low, high, color=colors[cond], alpha=0.15)
        if split:
            ax.axvline(split + 0.5, color="black", linestyle="--", linewidth=0.8)
        if value != "tokens":
            ax.set_ylim(-0.03, 1.03)
        ax.set_title(title)
        ax.set_xlabel("position in the task stream")
        ax.grid(alpha=0.3)
    if records:  # interrupted before the first run finished: an empty plot, no legend
        axes[0].legend(loc="lower right")
    fig.suptitle("bench_learning: mean over orders and seeds (band: min-max); dashed: train split")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class SeededLLM:
    """Passes a per-seed `seed` to every call, so --seeds > 1 samples differently (T > 0)."""

    def __init__(self, inner: LLM, seed: int) -> None:
        self.inner, self.seed = inner, seed

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]:
        return self.inner.complete(
            messages,
            schema=schema,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=self.seed * 1000 + (seed or 0),
        )


_COLUMNS = (("1st-round ok", "first_round_success", "{:.2f}"), ("by control",
            "first_round_by_control", "{:.2f}"), ("by sample", "first_round_by_sample",
            "{:.2f}"), ("final ok", "final_success",
            "{:.2f}"), ("rounds", "mean_rounds", "{:.2f}"), ("tokens/solved",
            "tokens_per_solved", "{:.0f}"), ("s/solved", "seconds_per_solved", "{:.1f}"),
            ("retro tok/solved", "retro_tokens_per_solved", "{:.0f}"), ("recall rate",
            "recall_rate", "{:.2f}"), ("lessons", "lessons_created", "{:.0f}"))  # fmt: skip


def print_summary(summary: Summary, console: Console) -> None:
    """The summary as rich tables: the whole stream, then the evaluation part."""
    for title, part in (("whole stream", summary.whole), ("evaluation part", summary.eval)):
        if not part:
            continue
        table = Table(title=f"bench_learning: {title} (mean \\[min-max] over orders x seeds)")
        for col in ("condition", "runs", *(c[0] for c in _COLUMNS)):
            table.add_column(col)
        for cond, m in part.items():
            cells = (getattr(m, attr).show(fmt) for _, attr, fmt in _COLUMNS)
            table.add_row(cond, str(m.runs), *cells)
        console.print(table)


def record(cond: Condition, task: Task, result: RunResult, key: dict[str, Any]) -> RunRecord:
    """The benchmark's view of one loop run."""
    seed_ids = [i for r in result.rounds[:1] for i in r.recalled_lesson_ids]
    later = [i for r in result.rounds[1:] for i in r.recalled_lesson_ids]
    return RunRecord(
        condition=cond, task_id=task.id, family=family_of(task), passed=result.passed,
        first_round_passed=result.rounds[0].feedback.passed, rounds=len(result.rounds),
        first_round_by_control=_first_passed_by(result, "control"),
        first_round_by_sample=_first_passed_by(result, "sample"),
        stop_reason=result.stop_reason, tokens=result.usage.total_tokens,
        seconds=round(result.seconds, 3), recalled_seed=tuple(dict.fromkeys(seed_ids)),
        recalled_reflection=tuple(dict.fromkeys(later)), **key,
    )  # fmt: skip


def _first_passed_by(result: RunResult, origin: str) -> bool:
    """Round 1 passed, and its chosen candidate was drawn as `origin`."""
    first = result.rounds[0]
    return first.feedback.passed and first.origin == origin


class LearningResults(BaseModel):
    """bench_learning.json: how it was run, every record, the summary, the lessons written."""

    benchmark: Literal["bench_learning"] = "bench_learning"
    config: dict[str, Any]
    tasks: list[str]
    split: int
    orders: dict[int, list[str]]
    planned_runs: dict[str, int]
    estimate_min: float
    started: float
    finished: float | None = None
    interrupted: bool = False
    # Each time an interrupted run was resumed (`--resume`): when it had stopped, when it went
    # on; `finished - started` then includes the time between.
    resumed: list[tuple[float | None, float]] = []
    png: str = "bench_learning.png"
    records: list[RunRecord] = []
    summary: Summary | None = None
    lessons: dict[str, list[dict[str, Any]]] = {}
    audit: LessonAudit | None = None

    def save(self, path: Path) -> None:
        """Refresh the summary and the lesson audit (once exported); write the JSON atomically."""
        self.summary = summarise(self.records)
        self.audit = audit(self.records, self.lessons) if self.lessons else None
        write_json_atomic(path, self.model_dump(mode="json"))
