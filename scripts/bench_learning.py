"""Lesson transfer: the same task stream with no memory, a learning memory, a frozen memory.

    python scripts/bench_learning.py examples/traps                # default budget (~1 h)
    python scripts/bench_learning.py examples/traps --limit 6      # quick look
    python scripts/bench_learning.py my_tasks/ --model openai:gpt-4o-mini --orders 3

Every argument is a task directory or a tree of them (any directory with a task.toml; names
starting with "_" or "." are skipped). The stream is run in several seeded random orders,
under three conditions with the same model and seeds:

- none:     the loop without memory;
- learning: a fresh store per stream; after every run the run is recorded (uses, outcome)
            and the retrospective's lessons are added, so later tasks can recall them;
- frozen:   learn on the first --train-frac of the order, then evaluate the rest with the
            store read-only (recall yes; no counters, no new lessons).

Three exact shortcuts keep the budget (all rest on the loop being deterministic at a fixed
temperature and seed, which the embedded model is at temperature 0, and, since the
twenty-sixth session, whatever call came before: `agent.llm.worker._reuse_whole_batches`):
- "none" has no state, so each task runs once per seed and its result is placed at its
  position in every order (records marked `reused`);
- a learning run whose store holds no recallable lesson yet (the stream's start, until a
  run is solved) can recall nothing, so it IS the "none" run: that result is taken (under the
  learning run's id), recorded in the store and given to the retrospective; marked `reused`;
- the frozen condition's training prefix IS the learning condition's prefix, so the learning
  store is snapshotted at the split (SQL copied, vector index rebuilt from SQL) instead of
  training a second time; the training records are copied, marked `reused`.

Figures per condition (mean [min-max] over orders x seeds): first-round and final success,
mean rounds, tokens and wall time per solved task, the retrospective's tokens (the cost of
learning); the evaluation part (after the split) also for none and learning. --out gets
bench_learning.json (rewritten after every run: Ctrl-C or SIGTERM keeps what was done) and
.png; every loop run's trajectory (candidates, checks, feedback; what a post-mortem needs)
goes to --out/runs/RUN_ID.json. `--resume` (with the same arguments, --out and
--keep-stores) goes on from what an interrupted run kept: its records stay, its stores are
opened again, each (condition, seed, order, position) it recorded is not run again. A
learning run killed after its lessons were stored but before its record was written runs
again; its lessons then meet themselves in the store's dedup.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agent.app.session import finish_run, start_run
from agent.container import Limits
from agent.llm.base import LLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.result import RunResult
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from memory import Embedder, HashEmbedder, LessonFilter, Memory, MiniLMEmbedder, NullRecall
from memory.types import Recall
from retrospectives.extract import Retrospective
from scripts._benchlib import (
    CONDITIONS,
    Condition,
    LearningResults,
    RunRecord,
    SeededLLM,
    discover_tasks,
    plot_curves,
    print_summary,
    record,
    select_tasks,
    stream_order,
    write_json_atomic,
)
from scripts._learning_stores import FrozenRecall, export_lessons, resumed, snapshot

# Seconds per loop run and per retrospective, measured here with the embedded model (the
# 2026-12-01 default run: 170 s and 68 s; with them the estimate was 71 min, the run took
# 70.8): they size the default budget.
EST_SECONDS_PER_RUN, EST_SECONDS_PER_RETRO = 170.0, 68.0


class BenchConfig(BaseModel):
    """What to run; everything in the JSON's "config" so a result says how it was made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_dirs: tuple[Path, ...]
    model: str = "local"
    seeds: int = Field(default=1, ge=1)
    orders: int = Field(default=2, ge=1)
    limit: int | None = Field(default=None, ge=2)
    # Without --limit, as many tasks as fit this many minutes (0: all), at these costs of a
    # loop run and of the retrospective after a learning run.
    budget_min: float = Field(default=60.0, ge=0)
    sec_per_run: float = Field(default=EST_SECONDS_PER_RUN, gt=0)
    sec_per_retro: float = Field(default=EST_SECONDS_PER_RETRO, ge=0)
    per_family: int = Field(default=2, ge=1)
    train_frac: float = Field(default=0.5, gt=0, lt=1)
    max_rounds: int = Field(default=3, ge=1)
    pool_size: int = Field(default=LoopConfig().pool_size, ge=1)
    first_pool: int = Field(default=LoopConfig().first_pool, ge=1)
    temperature: float = 0.0
    conditions: tuple[Condition, ...] = CONDITIONS
    embedder: str = "minilm"


def plan(config: BenchConfig, n: int) -> dict[str, int]:
    """How many loop runs each condition needs (after the shortcuts of the docstring)."""
    split = split_at(config, n)
    streams = config.seeds * config.orders
    runs = {"none": config.seeds * n if "none" in config.conditions else 0}
    learning = n if "learning" in config.conditions else split
    runs["learning"] = streams * learning if {"learning", "frozen"} & set(config.conditions) else 0
    runs["frozen"] = streams * (n - split) if "frozen" in config.conditions else 0
    return runs


def estimate_s(config: BenchConfig, n: int) -> float:
    """Expected wall time of a stream of `n` tasks (every learning run pays a retrospective)."""
    runs = plan(config, n)
    return sum(runs.values()) * config.sec_per_run + runs["learning"] * config.sec_per_retro


def fit_budget(config: BenchConfig, found: int) -> int | None:
    """--limit, or the largest task count whose estimate fits the time budget."""
    if config.limit is not None or config.budget_min <= 0:
        return config.limit
    fits = (n for n in range(found, 1, -1) if estimate_s(config, n) <= config.budget_min * 60)
    return next(fits, 2)


def split_at(config: BenchConfig, n: int) -> int:
    return min(n - 1, max(1, round(config.train_frac * n)))


OnRecord = Callable[[RunRecord], None]


class LearningBench:
    """Runs the conditions over the streams; `on_record` sees every record as it is made."""

    def __init__(
        self,
        config: BenchConfig,
        tasks: Sequence[Task],
        *,
        llm: LLM,
        embedder: Embedder,
        sandbox: Sandbox,
        store_dir: Path,
        on_record: OnRecord,
        runs_dir: Path | None = None,
        done: Sequence[RunRecord] = (),
    ) -> None:
        self.config, self.tasks = config, list(tasks)
        self.llm, self.embedder, self.sandbox = llm, embedder, sandbox
        self.store_dir, self.on_record = store_dir, on_record
        # Each loop run's trajectory (every candidate, check and feedback) as RUN_ID.json.
        self.runs_dir = runs_dir
        self.split = split_at(config, len(self.tasks))
        # Each task's run without memory, per seed (see the shortcuts in the docstring).
        self.none_results: dict[tuple[int, str], RunResult] = {}
        self.stores: dict[str, Memory] = {}
        # What a resumed bench recorded before (`--resume`): not run again.
        self.done = {(r.condition, r.seed, r.order, r.position): r for r in done}
        for rec in done:
            kept = runs_dir / f"none-{rec.seed}-{rec.task_id}.json" if runs_dir else None
            if rec.condition == "none" and kept is not None and kept.is_file():
                result = RunResult.model_validate_json(kept.read_text())
                self.none_results[(rec.seed, rec.task_id)] = result

    def run(self) -> None:
        """Every (seed, order) stream in turn; stores stay open in `self.stores` until close()."""
        for seed in range(self.config.seeds):
            llm = self.llm if seed == 0 else SeededLLM(self.llm, seed)
            for order in range(self.config.orders):
                self._stream(llm, seed, order)

    def close(self) -> None:
        for memory in self.stores.values():
            memory.close()

    def _stream(self, llm: LLM, seed: int, order: int) -> None:
        conds = set(self.config.conditions)
        learn_dir = self.store_dir / f"learning-s{seed}-o{order}"
        learning = self.stores[learn_dir.name] = Memory.open(str(learn_dir), embedder=self.embedder)
        frozen: Memory | None = None
        for pos, task in enumerate(stream_order(self.tasks, order)):
            phase = "train" if pos < self.split else "eval"
            key = {"seed": seed, "order": order, "position": pos, "phase": phase}

            def done(condition: str, pos: int = pos) -> RunRecord | None:
                return self.done.get((condition, seed, order, pos))

            if "frozen" in conds and pos == self.split:
                # Before the learning run at this position: the frozen store knows only
                # what the training part taught (a resumed bench opens the one it made).
                frozen_dir = self.store_dir / f"frozen-s{seed}-o{order}"
                frozen = (
                    Memory.open(str(frozen_dir), embedder=self.embedder)
                    if frozen_dir.exists()
                    else snapshot(learn_dir, frozen_dir, self.embedder)
                )
                self.stores[frozen_dir.name] = frozen
            if "none" in conds and not done("none"):
                self._none(llm, task, key)
            training = "frozen" in conds and pos < self.split
            rec = done("learning")
            if ("learning" in conds and rec is None) or (training and not done("frozen")):
                if rec is None:
                    rec = self._learn(llm, learning, task, key)
                    if "learning" in conds:
                        self.on_record(rec)
                if training:
                    copied = {"condition": "frozen", "reused": "learning" in conds}
                    self.on_record(rec.model_copy(update=copied))
            if frozen is not None and not done("frozen"):
                result = self._run(llm, task, FrozenRecall(frozen), f"frozen-{seed}-{order}-{pos}")
                self.on_record(record("frozen", task, result, key))

    def _none(self, llm: LLM, task: Task, key: dict[str, Any]) -> None:
        cached = self.none_results.get((key["seed"], task.id))
        if cached is None:
            result = self._run(llm, task, NullRecall(), f"none-{key['seed']}-{task.id}")
            self.none_results[(key["seed"], task.id)] = result
            self.on_record(record("none", task, result, key))
        else:
            self.on_record(record("none", task, cached, key).model_copy(update={"reused": True}))

    def _learn(self, llm: LLM, memory: Memory, task: Task, key: dict[str, Any]) -> RunRecord:
        run_id = f"learning-{key['seed']}-{key['order']}-{key['position']}"
        start_run(memory, task, run_id)
        same = self.none_results.get((key["seed"], task.id)) if _nothing_to_recall(memory) else None
        if same is not None:
            result = same.model_copy(update={"run_id": run_id})
        else:
            result = self._run(llm, task, memory, run_id)
        finish_run(memory, result)
        t0 = time.monotonic()
        outcome = Retrospective(llm).analyse(result)
        added = memory.add_many(outcome.drafts, run_id=run_id)
        actions = [a.action for a in added]
        return record("learning", task, result, key).model_copy(
            update={
                "reused": same is not None,
                "retro_tokens": outcome.usage.total_tokens,
                "retro_seconds": round(time.monotonic() - t0, 3),
                "lessons_created": actions.count("created"),
                "lessons_merged": actions.count("merged_duplicate"),
                "lessons_rejected": actions.count("rejected_recall_loop"),
            }
        )

    def _run(self, llm: LLM, task: Task, recall: Recall, run_id: str) -> RunResult:
        agent = ReflectiveAgent(
            llm,
            recall=recall,
            sandbox=self.sandbox,
            config=LoopConfig(
                max_rounds=self.config.max_rounds,
                temperature=self.config.temperature,
                pool_size=self.config.pool_size,
                first_pool=self.config.first_pool,
            ),
        )
        result = agent.run(task, run_id=run_id)
        if self.runs_dir is not None:
            write_json_atomic(self.runs_dir / f"{run_id}.json", result.model_dump(mode="json"))
        return result


def _nothing_to_recall(memory: Memory) -> bool:
    """No candidate or validated lesson: recall can return nothing, in any scope."""
    active = LessonFilter(status=("candidate", "validated"), limit=1)
    return memory.list_lessons(active).total == 0


def parse_args(argv: Sequence[str] | None) -> tuple[BenchConfig, Path, bool, bool]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("task_dirs", nargs="+", type=Path)
    p.add_argument("--model", default="local")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--orders", type=int, default=2)
    p.add_argument("--limit", type=int, default=None, help="tasks (default: fit the budget)")
    p.add_argument("--budget-min", type=float, default=60.0, help="0: every task")
    p.add_argument("--sec-per-run", type=float, default=EST_SECONDS_PER_RUN)
    p.add_argument("--sec-per-retro", type=float, default=EST_SECONDS_PER_RETRO)
    p.add_argument("--per-family", type=int, default=2)
    p.add_argument("--train-frac", type=float, default=0.5)
    p.add_argument("--max-rounds", type=int, default=3)
    p.add_argument("--pool-size", type=int, default=LoopConfig().pool_size)
    p.add_argument("--first-pool", type=int, default=LoopConfig().first_pool)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--keep-stores", action="store_true", help="keep the memory stores in --out")
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on from what an interrupted run kept in --out (same arguments)",
    )
    a = p.parse_args(argv)
    if a.resume and a.out is None:
        p.error("--resume needs --out")
    fields = ("model", "seeds", "orders", "limit", "per_family", "train_frac", "max_rounds",
              "pool_size", "first_pool", "temperature", "embedder", "budget_min", "sec_per_run",
              "sec_per_retro")  # fmt: skip
    config = BenchConfig(
        task_dirs=tuple(a.task_dirs),
        conditions=tuple(c.strip() for c in a.conditions.split(",")),
        **{name: getattr(a, name) for name in fields},
    )
    out = a.out or Path("bench-results") / f"learning-{time.strftime('%Y%m%d-%H%M%S')}"
    return config, out, a.keep_stores, a.resume


def run_bench(
    config: BenchConfig, out: Path, *, llm: LLM, embedder: Embedder, sandbox: Sandbox,
    console: Console, keep_stores: bool = False, resume: bool = False,
) -> LearningResults:  # fmt: skip
    """Run, rewriting out/bench_learning.json after every record; the PNG at the end.
    `resume`: go on from what out/bench_learning.json and out/stores kept (see the module's
    docstring); they must come from the same config and tasks."""
    found = [load_task(d) for d in discover_tasks(config.task_dirs)]
    tasks = select_tasks(found, fit_budget(config, len(found)), config.per_family)
    if len(tasks) < 2:
        raise SystemExit(f"bench_learning needs at least 2 tasks, found {len(tasks)}")
    runs = plan(config, len(tasks))
    estimate = estimate_s(config, len(tasks)) / 60
    console.print(
        f"{len(tasks)} of {len(found)} tasks, {config.orders} orders x {config.seeds} seeds; "
        f"loop runs {runs}; estimate ~{estimate:.0f} min ({config.sec_per_run:.0f} s per run, "
        f"{config.sec_per_retro:.0f} s per retrospective)"
    )
    results = LearningResults(
        config=config.model_dump(mode="json"), tasks=[t.id for t in tasks],
        split=split_at(config, len(tasks)), planned_runs=runs, estimate_min=round(estimate, 1),
        orders={o: [t.id for t in stream_order(tasks, o)] for o in range(config.orders)},
        started=time.time(),
    )  # fmt: skip
    path = out / "bench_learning.json"
    store_dir = out / "stores" if keep_stores else Path(tempfile.mkdtemp(prefix="bench-stores-"))
    done: list[RunRecord] = []
    if resume:
        results = resumed(results, path, store_dir if keep_stores else None, out / "runs")
        done = list(results.records)
        console.print(f"resuming {path}: {len(done)} records kept")
    elif keep_stores and store_dir.exists() and any(store_dir.iterdir()):
        raise SystemExit(f"{store_dir} holds an earlier run's stores: --resume, or another --out")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("bench_learning", total=sum(runs.values()))
        progress.advance(bar, sum(not r.reused for r in done))

        def on_record(rec: RunRecord) -> None:
            results.records.append(rec)
            progress.advance(bar, 0 if rec.reused else 1)
            mark = "[green]pass[/]" if rec.passed else "[red]fail[/]"
            progress.console.print(
                f"{rec.condition:<8} s{rec.seed} o{rec.order} #{rec.position:<3} {rec.task_id:<28}"
                f" {mark} r{rec.rounds} {rec.tokens} tok{' (reused)' if rec.reused else ''}"
            )
            results.save(path)

        bench = LearningBench(config, tasks, llm=llm, embedder=embedder, sandbox=sandbox,
                              store_dir=store_dir, on_record=on_record,
                              runs_dir=out / "runs", done=done)  # fmt: skip
        try:
            bench.run()
        except KeyboardInterrupt:
            results.interrupted = True
            console.print("[yellow]interrupted: keeping the partial results[/]")
        finally:
            results.lessons = export_lessons(bench.stores)
            bench.close()
            results.finished = time.time()
            results.save(path)
            plot_curves(results.records, results.split, out / results.png)
            if not keep_stores:
                shutil.rmtree(store_dir, ignore_errors=True)
    if results.summary is not None:
        print_summary(results.summary, console)
    if results.audit is not None:
        a = results.audit
        console.print(
            f"lessons stored: {a.lessons}, with a verified fix {a.verified} (unverified share "
            f"{a.unverified_share}); citing an unsolved run {a.from_unsolved_runs}; "
            f"recalls {a.recalls}, of such lessons {a.recalls_of_unsolved}"
        )
    console.print(f"wrote {path} and {out / results.png}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    from agent.app.settings import Settings
    from agent.llm.resolve import resolve_llm

    config, out, keep, resume = parse_args(argv)
    _interrupt_on_signals()
    console = Console(width=None if sys.stdout.isatty() else 160)
    llm = resolve_llm(config.model, Settings.from_env(model=config.model))
    embedder: Embedder = MiniLMEmbedder() if config.embedder == "minilm" else HashEmbedder()
    sandbox = Sandbox(Limits(cpu_s=60))
    results = run_bench(config, out, llm=llm, embedder=embedder, sandbox=sandbox,
                        console=console, keep_stores=keep, resume=resume)  # fmt: skip
    return 130 if results.interrupted else 0


def _interrupt_on_signals() -> None:
    """SIGTERM, and SIGINT even under nohup (which ignores it), stop like Ctrl-C does."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


if __name__ == "__main__":
    raise SystemExit(main())
