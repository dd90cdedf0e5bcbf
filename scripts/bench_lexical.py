"""Benchmark recall's BM25 alone (`memory.lexical.BM25`) in one big scope.

    python scripts/bench_lexical.py --sizes 10000 100000 --json bench_lexical.json

The lesson texts and queries of scripts/bench_memory.py, all in one scope (the worst case for
BM25: postings of common words are as long as the scope), with no SQL, vectors or model.
Times: scoring each query as a dict of every match, the top pool recall fuses
(`search().top(pool)`), and one add followed by each (what a recall pays after another
lesson arrived).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.dedup import index_text
from memory.lexical import BM25
from memory.ranking import RecallConfig
from scripts._synthetic_lessons import bench_queries, generate
from scripts.bench_memory import pct, timed


@dataclass
class LexicalResult:
    size: int
    build_s: float
    score_p50_ms: float
    score_p95_ms: float
    top_p50_ms: float
    top_p95_ms: float
    mean_matches: float
    add_score_p50_ms: float
    add_score_p95_ms: float
    add_top_p50_ms: float
    add_top_p95_ms: float


def run_lexical(size: int, args: argparse.Namespace) -> LexicalResult:
    """BM25 alone over `size` lesson texts in one scope: score, and add-then-score."""
    drafts = generate(size + args.adds, seed=args.seed + size)
    texts = [index_text(d.symptom, d.root_cause) for d in drafts]
    queries = bench_queries(args.queries, pool=args.pool, seed=args.seed)
    bm25 = BM25()
    t0 = time.perf_counter()
    for i, text in enumerate(texts[:size]):
        bm25.put(f"l{i}", text)
    build_s = time.perf_counter() - t0
    pool = RecallConfig.candidate_pool  # the default pool recall fuses

    def scores(q: str) -> None:
        bm25.scores(q)  # every match as a dict (what recall read before it used top)

    def top(q: str) -> None:
        bm25.search(q).top(pool)  # the best `pool` matches: what recall fuses

    scores(queries[0])  # warm up
    score_ms = [timed(lambda q=q: scores(q)) for q in queries]
    top_ms = [timed(lambda q=q: top(q)) for q in queries]
    matches = [len(bm25.search(q)) for q in queries]
    # What a recall pays after one more lesson arrived: the update, then the scoring.
    add_ms: list[float] = []
    add_top_ms: list[float] = []
    for k, text in enumerate(texts[size:]):
        q, t = queries[k % len(queries)], time.perf_counter()
        bm25.put(f"x{k}", text)
        (scores if k % 2 else top)(q)
        (add_ms if k % 2 else add_top_ms).append((time.perf_counter() - t) * 1000)
    return LexicalResult(
        size=size,
        build_s=round(build_s, 2),
        score_p50_ms=round(pct(score_ms, 0.5), 2),
        score_p95_ms=round(pct(score_ms, 0.95), 2),
        top_p50_ms=round(pct(top_ms, 0.5), 2),
        top_p95_ms=round(pct(top_ms, 0.95), 2),
        mean_matches=round(statistics.mean(matches), 1),
        add_score_p50_ms=round(pct(add_ms, 0.5), 2),
        add_score_p95_ms=round(pct(add_ms, 0.95), 2),
        add_top_p50_ms=round(pct(add_top_ms, 0.5), 2),
        add_top_p95_ms=round(pct(add_top_ms, 0.95), 2),
    )


def main_lexical(args: argparse.Namespace) -> int:
    lexical = []
    for size in args.sizes:
        lexical.append(run_lexical(size, args))
        print(json.dumps(asdict(lexical[-1])), flush=True)
    print(
        "(times in ms; score = scores() as a dict of every match; top = search().top(pool), "
        "recall's need; add_* = one put() then the same)"
    )
    if args.json:
        meta = {"python": platform.python_version(), "queries": args.queries, "adds": args.adds}
        args.json.write_text(
            json.dumps({"meta": meta, "lexical": [asdict(r) for r in lexical]}, indent=2)
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--adds", type=int, default=200, help="single put() calls timed")
    parser.add_argument("--pool", type=int, default=1000, help="template lessons for queries")
    parser.add_argument("--seed", type=int, default=7)
    return main_lexical(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
