"""Benchmark the lesson memory: write throughput and recall latency at 1k / 10k / 100k lessons.

    python scripts/bench_memory.py --sizes 1000 10000 100000 --modes embedded server \
        --json bench_memory.json

Modes:
- embedded: SQLite file + embedded chromadb (PersistentClient) in a temp dir.
- server:   PostgreSQL + a Chroma server. Pass --pg-url/--chroma-url, or let the script start
            both (PostgreSQL 15 binaries and the `chroma` CLI, as the test suite does).

Lessons are generated from templates (error families x symptoms x causes x fixes, with slots
for columns, files, functions, values) and spread over 20 project scopes plus "global"
(--scopes 1 puts them all in one project scope, the worst case for BM25: its postings of
common words are as long as the scope).
Vectors: real all-MiniLM-L6-v2 embeddings of a pool of template lessons (--pool, cached in
--cache), each reused with a small random jitter (cosine ~0.9 to its base) to give every
lesson its own vector. Embedding 100k lessons twice (recall text and dedup text) with MiniLM
takes hours on a 2-core machine, and the timings of interest here exclude embedding anyway;
--exact embeds every lesson for real. The per-query MiniLM embedding time is measured and
reported separately. Dedup runs (the scan is paid) with a threshold of 0.999 so the store
reaches the requested size.

Every time is reported twice: wall clock and the process CPU time of the same calls (on a
shared machine the wall clock also counts other processes' turns). Add and recall exclude
embedding; MiniLM's cost of one query and of one add's two texts is measured apart.

The goal run (issue 12): 100k lessons in one scope, beside today's code on the same store:

    python scripts/bench_memory.py --sizes 100000 --scopes 1 --global-share 0 \
        --batch 1000 --keep /tmp/s100k --json after.json      # builds the store, times the load
    cp -r /tmp/s100k /tmp/s100k-b && python scripts/bench_memory.py ... --keep /tmp/s100k-b
                                                             # reuses a copy: add and recall

(`--keep` reuses a store left by an earlier run; copy it first, since the timed adds stay
in it.)

scripts/bench_lexical.py times recall's BM25 alone over the same lesson texts in one scope.
The lessons and queries come from scripts/_synthetic_lessons.py, their vectors from
scripts/_table_vectors.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory import LessonQuery, Memory, MiniLMEmbedder  # noqa: E402
from memory.dedup import dedup_text, index_text  # noqa: E402
from scripts._synthetic_lessons import SCOPES, bench_queries, generate  # noqa: E402
from scripts._table_vectors import TableEmbedder, build_table  # noqa: E402


@dataclass
class Result:
    """One store size. Times are wall clock; `*_cpu_*` the process CPU time of the same calls
    (on a shared machine the wall clock also counts the other processes' turns)."""

    mode: str
    size: int
    stored: int
    load_s: float
    load_per_s: float
    load_cpu_per_s: float
    add_p50_ms: float
    add_p95_ms: float
    add_per_s: float
    add_cpu_p50_ms: float
    recall_p50_ms: float
    recall_p95_ms: float
    recall_cpu_p50_ms: float
    recall_cpu_p95_ms: float
    recall_mean_hits: float
    query_embed_p50_ms: float
    add_embed_p50_ms: float  # MiniLM, the two texts one add embeds (not in add_p50_ms)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def timed2(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall ms, process CPU ms, result) of one call."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000, out


def run_one(
    mode: str,
    size: int,
    opener: Callable[[TableEmbedder], Memory],
    embed_ms: tuple[float, float],
    args: argparse.Namespace,
    minilm: MiniLMEmbedder,
) -> Result:
    scopes = SCOPES[: args.scopes]
    drafts = generate(
        size + args.adds, seed=args.seed + size, scopes=scopes, global_share=args.global_share
    )
    load, extra = drafts[:size], drafts[size:]
    rng = random.Random(args.seed)
    # Queries read like the error output of a new run: a pool lesson's symptom (same family
    # as the pool vector its embedding is derived from).
    queries = bench_queries(args.queries, pool=args.pool, seed=args.seed)
    table = build_table(
        drafts,
        queries,
        minilm,
        seed=args.seed,
        pool_size=args.pool,
        cache=args.cache,
        exact=args.exact,
    )
    memory = opener(TableEmbedder(table))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        loaded = memory.list_lessons().total if args.keep else 0
        if loaded:
            print(f"  reusing {loaded} lessons of {args.keep}", flush=True)
        for start in range(0 if not loaded else size, size, args.batch):
            memory.add_many(load[start : start + args.batch])
            if args.verbose:
                print(f"  {mode} {size}: loaded {min(size, start + args.batch)}", flush=True)
        load_s, load_cpu = time.perf_counter() - t0, time.process_time() - c0
        adds = [timed2(lambda d=d: memory.add(d)) for d in extra]
        recalls = []
        for q in queries:
            scope = rng.choice(scopes)
            lq = LessonQuery(text=q, scope=scope, include_global=True, limit=3, token_budget=400)
            recalls.append(timed2(lambda lq=lq: memory.recall(lq)))
        stored = memory.list_lessons().total
    finally:
        memory.close()
    add_ms, add_cpu = [w for w, _, _ in adds], [c for _, c, _ in adds]
    recall_ms, recall_cpu = [w for w, _, _ in recalls], [c for _, c, _ in recalls]
    return Result(
        mode=mode,
        size=size,
        stored=stored,
        load_s=round(load_s, 2),
        load_per_s=0.0 if loaded else round(size / load_s, 1),
        load_cpu_per_s=0.0 if loaded else round(size / load_cpu, 1),
        add_p50_ms=round(pct(add_ms, 0.5), 2),
        add_p95_ms=round(pct(add_ms, 0.95), 2),
        add_per_s=round(1000 * len(add_ms) / sum(add_ms), 1),
        add_cpu_p50_ms=round(pct(add_cpu, 0.5), 2),
        recall_p50_ms=round(pct(recall_ms, 0.5), 2),
        recall_p95_ms=round(pct(recall_ms, 0.95), 2),
        recall_cpu_p50_ms=round(pct(recall_cpu, 0.5), 2),
        recall_cpu_p95_ms=round(pct(recall_cpu, 0.95), 2),
        recall_mean_hits=round(statistics.mean(len(found) for _, _, found in recalls), 2),
        query_embed_p50_ms=round(embed_ms[0], 1),
        add_embed_p50_ms=round(embed_ms[1], 1),
    )


def measure_embedding(minilm: MiniLMEmbedder, n: int = 20) -> tuple[float, float]:
    """p50 ms of the real MiniLM (warm) embedding one query, and one add's two texts."""
    minilm.embed(["warm up"])
    texts = [f"ValueError: could not convert string to float: '${k},99' in price" for k in range(n)]
    query = pct([timed(lambda t=t: minilm.embed([t])) for t in texts], 0.5)
    # An add embeds root cause + fix (dedup) and symptom + root cause (the index), one each.
    pairs = [(dedup_text(t, "strip it"), index_text(t, "a currency sign")) for t in texts]
    add = pct([timed(lambda p=p: [minilm.embed([x]) for x in p]) for p in pairs], 0.5)
    return query, add


def server_opener(
    args: argparse.Namespace, stack: list[Callable[[], None]]
) -> Callable[[int], Callable[[TableEmbedder], Memory]]:
    pg_url, chroma_url = args.pg_url, args.chroma_url
    pg = None
    if pg_url is None or chroma_url is None:
        sys.path.insert(0, str(REPO / "tests" / "memory"))
        from memory_servers import start_chroma, start_postgres

        if pg_url is None:
            pg = start_postgres()
            stack.append(pg.stop)
        if chroma_url is None:
            chroma = start_chroma()
            stack.append(chroma.stop)
            chroma_url = chroma.url

    def for_size(size: int) -> Callable[[TableEmbedder], Memory]:
        name = f"bench{size}_{uuid.uuid4().hex[:6]}"
        url = pg.create_database(name) if pg is not None else pg_url

        def open_(emb: TableEmbedder) -> Memory:
            return Memory.open(
                url,
                embedder=emb,
                chroma_url=chroma_url,
                collection=f"lessons-{name}",
                dedup_similarity=0.999,
            )

        return open_

    return for_size


def print_table(results: list[Result]) -> None:
    cols = [
        ("mode", "mode"),
        ("size", "lessons"),
        ("load_per_s", "bulk/s"),
        ("add_p50_ms", "add p50"),
        ("load_cpu_per_s", "bulk/cpu-s"),
        ("add_p95_ms", "add p95"),
        ("add_cpu_p50_ms", "add cpu p50"),
        ("recall_p50_ms", "recall p50"),
        ("recall_p95_ms", "recall p95"),
        ("recall_cpu_p50_ms", "rec cpu p50"),
        ("recall_cpu_p95_ms", "rec cpu p95"),
        ("recall_mean_hits", "hits"),
        ("query_embed_p50_ms", "q-embed p50"),
        ("add_embed_p50_ms", "add-embed p50"),
    ]
    print(" | ".join(f"{title:>11}" for _, title in cols))
    for r in results:
        d = asdict(r)
        print(" | ".join(f"{d[key]!s:>11}" for key, _ in cols))
    print(
        "(times in ms; add and recall exclude embedding: q-embed / add-embed = real MiniLM, "
        "one query / one add's two texts; cpu = process CPU time of the same calls)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--modes", nargs="+", choices=["embedded", "server"], default=["embedded"])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--adds", type=int, default=200, help="single add() calls timed")
    parser.add_argument("--batch", type=int, default=500, help="add_many batch for the bulk load")
    parser.add_argument("--pool", type=int, default=1000, help="distinct MiniLM-embedded lessons")
    parser.add_argument("--exact", action="store_true", help="embed every lesson with MiniLM")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "lessonloop-bench"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-url")
    parser.add_argument("--chroma-url")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--global-share", type=float, default=0.05, help="share of lessons in scope 'global'"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="embedded mode, one size: build the store in this directory, or reuse the one "
        "a previous run left there (its bulk load is then not timed)",
    )
    parser.add_argument(
        "--scopes",
        type=int,
        default=len(SCOPES),
        choices=range(1, len(SCOPES) + 1),
        metavar=f"1..{len(SCOPES)}",
        help="project scopes the lessons are spread over",
    )
    args = parser.parse_args(argv)

    if args.keep and (args.modes != ["embedded"] or len(args.sizes) != 1):
        parser.error("--keep needs --modes embedded and one size")
    minilm = MiniLMEmbedder(batch_size=128)
    embed_ms = measure_embedding(minilm)
    results: list[Result] = []
    cleanup: list[Callable[[], None]] = []
    try:
        for mode in args.modes:
            server = server_opener(args, cleanup) if mode == "server" else None
            for size in args.sizes:
                with tempfile.TemporaryDirectory(prefix="lessonloop-bench-") as tmp:
                    if server is not None:
                        opener = server(size)
                    else:
                        where = str(args.keep or tmp)

                        def opener(emb: TableEmbedder, where: str = where) -> Memory:
                            return Memory.open(where, embedder=emb, dedup_similarity=0.999)

                    result = run_one(mode, size, opener, embed_ms, args, minilm)
                results.append(result)
                print(json.dumps(asdict(result)), flush=True)
    finally:
        for stop in reversed(cleanup):
            stop()
    print_table(results)
    if args.json:
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "pool": args.pool,
            "exact": args.exact,
            "queries": args.queries,
            "adds": args.adds,
            "scopes": args.scopes,
            "global_share": args.global_share,
            "batch": args.batch,
            "reused_store": str(args.keep) if args.keep else None,
            "load_average": os.getloadavg(),
        }
        args.json.write_text(
            json.dumps({"meta": meta, "results": [asdict(r) for r in results]}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
