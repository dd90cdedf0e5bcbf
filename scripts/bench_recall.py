"""Retrieval benchmark: real error output -> the lesson that fixes it; MiniLM recall vs BM25.

    python scripts/bench_recall.py                       # full labelled set, real MiniLM
    python scripts/bench_recall.py --limit 12 --embedder hash --out /tmp/recall.json

benchmarks/recall/cases.toml holds small faulty programs (float('$1,299.99'), a BOM before the
header, cp1252 read as UTF-8, ...), lessons.toml the curated lessons (one per root cause) and
distractors. Each program really runs in agent.sandbox with the trap tasks' check command;
the query is `classify(result).compressed()` with the loop's error types, exactly what the
loop sends to recall at reflection. No error text is written by hand. The labelled set
and how its queries are built: scripts/_recall_suite.py.

Methods on the same lessons and queries: recall as built (`Memory.recall`: MiniLM and BM25
fused, error-type gate, similarity cut, 3 lessons, 300 tokens: what the reflector sees);
recall's fused ranking of every lesson without gate or cut; BM25 alone over the same indexed
lesson text (symptom + root cause), with and without an error-type filter. BM25 has no
natural "nothing relevant" answer: its no-lesson rate is N/A, plus the score cut that
silences every unrelated query (an optimistic bound: it is chosen on those queries).
Unrelated queries (other errors; goals sent as seed queries) must recall nothing: the
no-lesson rate is the share that got an empty recall. Every method is also scored on the odd
and the even labelled queries (and its no-lesson rate on the odd and the even unrelated
ones): recall has no per-query knobs, and a change that helps one half only is not a change
to trust.

Both stages are shown. Reflection: the error queries above with their error types, against
the unrelated errors. Seed (task start, no error types; scripts/_recall_stages.py): the same
error texts sent at the seed stage, and the loop's task-start text (goal + first lines of the
input files) for each labelled case's `task_goal`, against the unrelated errors and goals;
each as built and with higher seed gates (memory.recall, `seed_min_similarity`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.table import Table

from agent.container import Limits
from agent.loop import LoopConfig
from agent.sandbox import Sandbox
from memory import Embedder, HashEmbedder, LessonDraft, LessonQuery, Memory, MiniLMEmbedder, lexical
from memory.dedup import index_text
from memory.matchtext import match_text
from memory.quality import RankingMetrics, no_lesson_rate, ranking_metrics
from scripts._benchlib import REPO, round_robin, write_json_atomic
from scripts._recall_stages import SEED_GATES, gated, seed_views
from scripts._recall_suite import (
    SUITE,
    LessonSpec,
    Query,
    Suite,
    load_suite,
    run_case,
    task_start,
)
from scripts._recall_traps import TrapSeedReport, humaneval_goals, print_trap_seed, run_trap_seed

SCOPE = "bench"
# What the loop asks for by default: lessons per recall and their token budget.
LOOP_LIMIT, LOOP_BUDGET = LoopConfig().lesson_limit, LoopConfig().lesson_token_budget


class MethodReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    related: RankingMetrics
    no_lesson_rate: float | None
    note: str = ""
    # The same metrics on the odd and the even labelled queries (1st, 3rd, ... and 2nd, ...):
    # a change that helps only one half is noise or fitted to it.
    halves: tuple[RankingMetrics, RankingMetrics] | None = None
    # The no-lesson rate on the odd and the even unrelated queries.
    no_lesson_halves: tuple[float, float] | None = None
    rankings: dict[str, list[tuple[str, float]]] = Field(default_factory=dict)


class RecallReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    benchmark: Literal["bench_recall"] = "bench_recall"
    embedder: str
    lessons: int
    methods: tuple[MethodReport, ...]
    queries: tuple[Query, ...]
    seconds: float
    trap_tasks: TrapSeedReport | None = None  # scripts/_recall_traps.py


class Ranker(Protocol):
    def rank(self, query: Query) -> list[tuple[str, float]]:
        """(lesson label, score) best first; empty when nothing is deemed relevant."""
        ...


@dataclass(frozen=True)
class MemoryRanker:
    """`Memory.recall` under given knobs, mapped back to lesson labels."""

    memory: Memory
    labels: dict[str, str]
    limit: int
    token_budget: int
    min_similarity: float | None
    use_types: bool

    def rank(self, query: Query) -> list[tuple[str, float]]:
        hits = self.memory.recall(
            LessonQuery(
                text=query.text,
                surface=query.surface,
                data=query.data,
                scope=SCOPE,
                error_types=query.error_types if self.use_types else (),
                stage=query.stage,
                limit=self.limit,
                token_budget=self.token_budget,
                min_similarity=self.min_similarity,
            )
        )
        return [(self.labels[h.lesson.id], round(h.score, 4)) for h in hits]


class BM25Ranker:
    """BM25 over the indexed lesson text (recall's own `memory.lexical.BM25`); optional
    error-type filter like the loop's."""

    def __init__(self, lessons: Sequence[LessonSpec], *, use_types: bool) -> None:
        self.lessons = list(lessons)
        self.bm25 = lexical.BM25()
        for lesson in self.lessons:
            self.bm25.put(lesson.id, index_text(lesson.symptom, lesson.root_cause))
        self.use_types = use_types

    def rank(self, query: Query) -> list[tuple[str, float]]:
        # Read like the documents (memory.matchtext), as recall's own BM25 reads it.
        found = self.bm25.scores(match_text(query.text))  # only lessons sharing a word, all > 0
        scored = [
            (lesson.id, round(found[lesson.id], 4))
            for lesson in self.lessons
            if lesson.id in found
            and (
                not self.use_types
                or not query.error_types
                or lesson.error_type in query.error_types
            )
        ]
        return sorted(scored, key=lambda pair: -pair[1])


def evaluate_method(
    name: str,
    ranker: Ranker,
    related: Sequence[Query],
    unrelated: Sequence[Query],
    *,
    has_cut: bool,
    note: str = "",
) -> MethodReport:
    """Metrics of one ranker on the labelled and the unrelated queries."""
    ranked = {q.id: ranker.rank(q) for q in (*related, *unrelated)}

    def metrics(queries: Sequence[Query]) -> RankingMetrics:
        return ranking_metrics(
            [[label for label, _ in ranked[q.id]] for q in queries],
            [q.target or "" for q in queries],
        )

    def rate_of(queries: Sequence[Query]) -> float | None:
        return no_lesson_rate([ranked[q.id] for q in queries]) if has_cut else None

    odd, even = rate_of(unrelated[0::2]), rate_of(unrelated[1::2])
    rate = rate_of(unrelated)
    return MethodReport(
        name=name,
        related=metrics(related),
        no_lesson_rate=rate,
        no_lesson_halves=None if odd is None or even is None else (odd, even),
        note=note,
        rankings=ranked,
        halves=(metrics(related[0::2]), metrics(related[1::2])),
    )


def with_cut(
    report: MethodReport, related: Sequence[Query], unrelated: Sequence[Query]
) -> MethodReport:
    """The method with a score cut just above its best unrelated score (an oracle cut)."""
    top = max((r[0][1] for q in unrelated if (r := report.rankings[q.id])), default=0.0)
    cut = {q.id: [(x, s) for x, s in report.rankings[q.id] if s > top] for q in related}
    metrics = ranking_metrics(
        [[label for label, _ in cut[q.id]] for q in related], [q.target or "" for q in related]
    )
    return MethodReport(
        name=f"{report.name}, cut > {top:.2f}",
        related=metrics,
        no_lesson_rate=1.0,
        note="score cut chosen on the unrelated queries themselves: an optimistic bound",
    )


def build_memory(
    embedder: Embedder, lessons: Sequence[LessonSpec]
) -> tuple[Memory, dict[str, str]]:
    """An in-memory store holding the curated lessons; returns it and {lesson id: label}."""
    memory = Memory.in_memory(embedder)
    drafts = [LessonDraft(**x.model_dump(exclude={"id", "scope"}), scope=SCOPE) for x in lessons]
    results = memory.add_many(drafts)
    labels: dict[str, str] = {}
    for spec, result in zip(lessons, results, strict=True):
        if result.action != "created" or result.lesson is None:
            raise ValueError(f"curated lesson {spec.id} was not stored: {result.reason}")
        labels[result.lesson.id] = spec.id
    return memory, labels


def evaluate_seed(
    memory: Memory,
    labels: dict[str, str],
    related: Sequence[Query],
    unrelated: Sequence[Query],
    task_starts: Sequence[Query],
) -> list[MethodReport]:
    """The seed stage (scripts/_recall_stages.py), with and without the seed gate."""
    ranker = MemoryRanker(memory, labels, LOOP_LIMIT, LOOP_BUDGET, None, False)
    reports = []
    for view, (labelled, others) in seed_views(related, unrelated, task_starts, Query).items():
        if not labelled:
            continue
        for gate, stated in ((None, False), *((g, True) for g in SEED_GATES)):
            name = f"{view}: " + (f"seed gate (best >= {gate})" if gate else "as built")
            name += "" if stated else ", no stated-type gate"
            run = partial(evaluate_method, name, ranker, labelled, others, has_cut=True,
                          note="recall as built")  # fmt: skip
            reports.append(gated(memory, gate, run, stated=stated))
    return reports


def evaluate(
    suite: Suite,
    related: Sequence[Query],
    unrelated: Sequence[Query],
    embedder: Embedder,
    task_starts: Sequence[Query] = (),
) -> list[MethodReport]:
    """Every method of the module docstring on the same queries."""
    memory, labels = build_memory(embedder, suite.lessons)
    seed_unrelated = list(unrelated)
    unrelated = [q for q in unrelated if q.stage == "reflection"]
    cut = memory.recall_config.min_similarity
    as_built = (
        f"MiniLM + BM25 fused, error-type gate, similarity >= {cut}, {LOOP_LIMIT} lessons, "
        f"{LOOP_BUDGET} tokens"
    )
    methods: list[tuple[str, Ranker, bool, str]] = [
        ("recall as built", MemoryRanker(memory, labels, LOOP_LIMIT, LOOP_BUDGET, None, True),
         True, as_built),
        ("recall ranking, no gate/cut",
         MemoryRanker(memory, labels, min(50, len(suite.lessons)), 10**6, -1.0, False),
         False, "recall's fused MiniLM + BM25 ranking of every lesson"),
    ]  # fmt: skip
    try:
        reports = [
            evaluate_method(name, ranker, related, unrelated, has_cut=has_cut, note=note)
            for name, ranker, has_cut, note in methods
        ]
        reports += evaluate_seed(memory, labels, related, seed_unrelated, task_starts)
    finally:
        memory.close()
    for use_types in (True, False):
        name = "BM25" + (" + error-type filter" if use_types else "")
        ranker = BM25Ranker(suite.lessons, use_types=use_types)
        bm25 = evaluate_method(name, ranker, related, unrelated, has_cut=False, note="no cut: N/A")
        reports += [bm25, with_cut(bm25, related, unrelated)]
    return reports


def print_report(report: RecallReport, console: Console) -> None:
    if report.trap_tasks is not None:
        print_trap_seed(report.trap_tasks, console)
    if not report.methods:
        return
    n = sum(1 for q in report.queries if q.target)
    table = Table(
        title=f"Recall: {n} labelled errors, {len(report.queries) - n} unrelated queries, "
        f"{report.lessons} lessons ({report.embedder})"
    )
    columns = ("method", "hit@1", "hit@3", "MRR", "odd | even half", "empty (related)",
               "no-lesson rate (odd | even)", "note")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for m in report.methods:
        rate = "N/A" if m.no_lesson_rate is None else f"{m.no_lesson_rate:.2f}"
        if m.no_lesson_halves is not None:
            rate += " ({:.2f} | {:.2f})".format(*m.no_lesson_halves)
        scores = (f"{x:.2f}" for x in (m.related.hit_at_1, m.related.hit_at_3, m.related.mrr))
        halves = " | ".join(
            f"{h.hit_at_1:.2f}/{h.hit_at_3:.2f}/{h.mrr:.2f}" for h in m.halves or ()
        )
        table.add_row(m.name, *scores, halves, str(m.related.empty), rate, m.note)
    console.print(table)
    built = report.methods[0]
    for q in report.queries:
        if q.id not in built.rankings:
            continue
        if not q.target or [x for x, _ in built.rankings[q.id][:1]] == [q.target]:
            continue
        got = ", ".join(f"{x} {s:.2f}" for x, s in built.rankings[q.id]) or "nothing"
        console.print(f"[yellow]miss@1[/] {q.id} (want {q.target}, {q.error_types}): {got}")


def run_benchmark(
    suite: Suite, embedder: Embedder, sandbox: Sandbox, *, limit: int | None = None,
    on_case: Callable[[str], None] | None = None,
) -> RecallReport:  # fmt: skip
    """Run the (round-robin `limit` of the) labelled cases and the unrelated ones; score."""
    start = time.monotonic()
    labelled = round_robin(suite.cases, lambda c: c.lesson or "", limit)
    cases = [*labelled, *suite.unrelated]
    queries = []
    for i, case in enumerate(cases, 1):
        if on_case is not None:
            on_case(f"running {case.id} ({i}/{len(cases)})")
        queries.append(run_case(case, sandbox))
    related = [q for q in queries if q.target]
    unrelated = [q for q in queries if not q.target]
    starts = [s for c in labelled if (s := task_start(c)) is not None]
    return RecallReport(
        embedder=embedder.model_id, lessons=len(suite.lessons), queries=(*queries, *starts),
        methods=tuple(evaluate(suite, related, unrelated, embedder, starts)),
        seconds=round(time.monotonic() - start, 2),
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", type=Path, default=SUITE)
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="labelled cases (round robin)")
    parser.add_argument("--out", type=Path, default=None, help="JSON output file")
    parser.add_argument(
        "--trap-tasks",
        choices=("yes", "no", "only"),
        default="yes",
        help="the seed stage on the trap tasks' starts (scripts/_recall_traps.py)",
    )
    args = parser.parse_args(argv)
    # Wide enough for the table when the output is a file (nohup, CI), not a terminal.
    console = Console(width=None if sys.stdout.isatty() else 160)
    embedder: Embedder = MiniLMEmbedder() if args.embedder == "minilm" else HashEmbedder()
    sandbox, start = Sandbox(Limits(cpu_s=20)), time.monotonic()
    with console.status("running faulty programs in the sandbox") as status:
        report = RecallReport(embedder=embedder.model_id, lessons=0, methods=(), queries=(),
                              seconds=0.0)  # fmt: skip
        if args.trap_tasks != "only":
            report = run_benchmark(load_suite(args.suite), embedder, sandbox, limit=args.limit,
                                   on_case=status.update)  # fmt: skip
        if args.trap_tasks != "no":
            traps = run_trap_seed(embedder, sandbox, humaneval_goals(), on_step=status.update)
            report = report.model_copy(update={"trap_tasks": traps})
        report = report.model_copy(update={"seconds": round(time.monotonic() - start, 2)})
    print_report(report, console)
    out = args.out or REPO / "bench-results" / f"bench_recall-{time.strftime('%Y%m%d-%H%M%S')}.json"
    write_json_atomic(out, report.model_dump(mode="json"))
    console.print(f"wrote {out} ({report.seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
