"""Benchmark consolidation: a full pass and an incremental pass at growing lesson counts.

    python scripts/bench_consolidate.py                 # 1k, 10k, 100k
    python scripts/bench_consolidate.py --sizes 1000 10000 --out bench-results/consolidate.json
    python scripts/bench_consolidate.py --stores ~/.cache/lessonloop-bench   # reuse set-ups

Each size gets a fresh file store (SQLite + embedded chromadb). Lessons come in root-cause
groups of ~10 paraphrases spread over 5 scopes x 20 error types. Phases timed apart:
- setup: lessons written straight to SQL and the index (not part of consolidation); with
  `--stores DIR` the set-up and embedded store of each size is kept there and copied;
- embed: root-cause vectors of every lesson (precomputed, cached in SQL);
- full pass: the first pass, where every lesson is new (deterministic canonicals, no model),
  split into clustering (neighbour search + linkage) and writing (plans, SQL, index);
- incremental: `--incremental` (1,000) new paraphrases added, embedded (timed apart) and
  consolidated; then a third pass, which must merge nothing.
Growth is each size's full pass over the previous one, beside n log n's ratio. Quality at
scale: purity and duplicate rate of the full pass against the synthetic groups, and the
neighbour search's recall of the exact 10 nearest on 500 lessons of the largest scope.
The hashing embedder keeps embedding cheap so the pass itself is what is measured; the
MiniLM embedding rate is printed separately (texts/s) to extrapolate the embed phase.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.embeddings import Embedder, HashEmbedder, MiniLMEmbedder
from memory.export import header_line, import_lessons
from memory.store import Memory
from memory.types import LessonFilter
from retrospectives.consolidate import ConsolidationConfig, Consolidator
from retrospectives.neighbours import SearchConfig, nearest

WORDS = [
    "amount",
    "currency",
    "header",
    "bom",
    "encoding",
    "comma",
    "decimal",
    "timezone",
    "naive",
    "json",
    "quote",
    "key",
    "missing",
    "column",
    "row",
    "float",
    "int",
    "string",
    "list",
    "dict",
    "none",
    "empty",
    "cell",
    "locale",
    "sign",
    "prefix",
    "suffix",
    "space",
    "case",
    "order",
    "sort",
    "round",
    "precision",
    "loop",
    "bound",
    "index",
    "slice",
    "file",
    "stream",
    "memory",
    "recursion",
    "limit",
    "parse",
    "convert",
    "strip",
    "split",
    "join",
    "format",
    "date",
    "month",
    "year",
    "utf",
    "latin",
    "byte",
    "mark",
]
FILLER = [
    "the",
    "a",
    "value",
    "values",
    "when",
    "because",
    "so",
    "which",
    "is",
    "are",
    "was",
    "were",
    "from",
    "in",
    "of",
]


def make_lessons(n: int, rng: random.Random, start: int = 0) -> list[tuple[int, str, str, str]]:
    """(group, scope, error_type, root_cause): ~10 paraphrases per group."""
    groups = max(1, n // 10)
    out = []
    for i in range(start, start + n):
        g = rng.randrange(groups) if start else i % groups
        core = random.Random(g).sample(WORDS, 5)
        words = core + rng.sample(FILLER, 3) + [rng.choice(WORDS)]
        rng.shuffle(words)
        out.append((g, f"scope{g % 5}", f"Error{g % 20}", " ".join(words)))
    return out


def write_lessons(memory: Memory, lessons: list[tuple[int, str, str, str]]) -> None:
    """Bulk load (setup only): a restore through `memory.export.import_lessons`, no dedup."""
    now = datetime.now(UTC).isoformat()
    lines = [header_line()]
    for k, (g, s, t, r) in enumerate(lessons):
        record = {
            "id": f"les_{k:08d}{random.getrandbits(24):06x}",
            "scope": s,
            "error_type": t,
            "symptom": f"{t} in solution.py",
            "root_cause": r,
            "fix": f"fix for group {g}",
            "applies_when": "",
            "evidence": [],
            "status": "candidate",
            "seen": 1,
            "recalled": 0,
            "helped": 0,
            "misled": 0,
            "merged_into": None,
            "merged_from": [],
            "created_at": now,
            "updated_at": now,
            "embedding_model": "",
        }
        lines.append(json.dumps(record))
    report = import_lessons(memory, lines)
    if not report.ok:
        raise SystemExit(f"bench setup failed: {report.errors[:3]}")


def group_of(fix: str) -> str:
    """The synthetic group a lesson was written for (its fix says it)."""
    return fix.rsplit(" ", 1)[-1]


def scale_quality(memory: Memory) -> dict[str, float]:
    """Purity and duplicate rate of the active lessons against the synthetic groups."""
    by_id: dict[str, str] = {}
    actives: list[tuple[str, list[str]]] = []
    offset = 0
    while True:
        page = memory.list_lessons(LessonFilter(limit=1000, offset=offset)).items
        if not page:
            break
        offset += len(page)
        for les in page:
            if not les.merged_from:
                by_id[les.id] = group_of(les.fix)
            if les.status != "merged":
                actives.append((les.id, list(les.merged_from)))
    members = [[by_id[i] for i in (m or [a])] for a, m in actives]
    majority = [Counter(m).most_common(1)[0] for m in members]
    labels = [label for label, _ in majority]
    return {
        "purity": sum(c for _, c in majority) / max(1, sum(len(m) for m in members)),
        "duplicate_rate": (len(labels) - len(set(labels))) / max(1, len(labels)),
        "active": len(actives),
    }


def search_recall(memory: Memory, sample: int = 500) -> dict[str, float | str]:
    """Recall of the 10 nearest (as the pass searches them) against the exact search, on
    `sample` lessons of the largest scope."""
    buckets = memory.consolidation_buckets(full=True, across_types=True)
    vectors = max(
        (memory.bucket_vectors(b, full=True) for b in buckets), key=lambda v: len(v.new_ids)
    )
    mat = vectors.new.astype(np.float32)
    n = mat.shape[0]
    queries = np.random.default_rng(0).choice(n, size=min(sample, n), replace=False)
    every = np.arange(n, dtype=np.int64)
    used = SearchConfig()
    approx = "exact" if n * n <= used.exact_limit else "ivf"
    got, _ = nearest(mat, every, 10, used)
    want, _ = nearest(mat, queries.astype(np.int64), 10, SearchConfig(exact_limit=2**62))
    hits = sum(len(set(g) & set(w)) for g, w in zip(got[queries], want, strict=True))
    return {"scope_lessons": n, "search": approx, "recall_at_10": hits / want.size}


def prepared_store(n: int, embedder: Embedder, workdir: Path, cache: Path | None) -> float:
    """Set up (or copy from `cache`) the store of size n in `workdir`; the setup seconds."""
    store = workdir / f"store-{n}"
    kept = cache / f"store-{n}" if cache else None
    if kept is not None and (kept / "done").exists():
        shutil.copytree(kept, store)
        return float((kept / "done").read_text())
    rng = random.Random(n)
    t = time.perf_counter()
    with Memory.open(str(store), embedder=embedder) as memory:
        write_lessons(memory, make_lessons(n, rng))
    setup = time.perf_counter() - t
    if kept is not None:
        with Memory.open(str(store), embedder=embedder) as memory:
            memory.embed_root_causes()
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(store, kept)
        (kept / "done").write_text(f"{setup}")
    return setup


def bench_size(
    n: int,
    embedder: Embedder,
    workdir: Path,
    say: Callable[[str], None],
    *,
    incremental: int = 1000,
    cache: Path | None = None,
) -> dict[str, float | int | str]:
    setup = prepared_store(n, embedder, workdir, cache)
    say(f"  setup {setup:.1f}s")
    with Memory.open(str(workdir / f"store-{n}"), embedder=embedder) as memory:
        consolidator = Consolidator(memory, llm=None, config=ConsolidationConfig(threshold=0.6))
        t = time.perf_counter()
        embedded = memory.embed_root_causes()
        embed = time.perf_counter() - t
        say(f"  embed {embed:.1f}s ({embedded} embedded)")
        recall = search_recall(memory)
        # CPU seconds beside wall seconds: on a shared machine the wall clock waits for others.
        t, cpu = time.perf_counter(), time.process_time()
        full = consolidator.run()
        full_s, full_cpu = time.perf_counter() - t, time.process_time() - cpu
        say(f"  full pass {full_s:.1f}s, {full_cpu:.1f} CPU s (cluster "
            f"{full.seconds_cluster:.1f}s, write {full.seconds_write:.1f}s), "
            f"merges {len(full.merges)}")  # fmt: skip
        quality = scale_quality(memory)
        rng = random.Random(n + 1)
        extra = make_lessons(incremental, rng, start=n)
        write_lessons(memory, extra)
        t = time.perf_counter()
        memory.embed_root_causes()
        embed_incr = time.perf_counter() - t
        t, cpu = time.perf_counter(), time.process_time()
        incr = consolidator.run()
        incr_s, incr_cpu = time.perf_counter() - t, time.process_time() - cpu
        say(f"  incremental +{len(extra)}: {incr_s:.1f}s, {incr_cpu:.1f} CPU s, "
            f"merges {len(incr.merges)}")  # fmt: skip
        noop = consolidator.run()
        return {
            "lessons": n,
            "setup_s": setup,
            "embed_s": embed,
            "embedded": embedded,
            "full_s": full_s,
            "full_cpu_s": full_cpu,
            "full_cluster_s": full.seconds_cluster,
            "full_write_s": full.seconds_write,
            "full_merges": len(full.merges),
            "full_purity": round(quality["purity"], 4),
            "full_duplicate_rate": round(quality["duplicate_rate"], 4),
            "active_after_full": int(quality["active"]),
            **{f"search_{k}": v for k, v in recall.items()},
            "incr_new": len(extra),
            "incr_embed_s": embed_incr,
            "incr_s": incr_s,
            "incr_cpu_s": incr_cpu,
            "incr_cluster_s": incr.seconds_cluster,
            "incr_merges": len(incr.merges),
            "noop_merges": len(noop.merges),
        }


def minilm_rate(count: int = 256) -> float:
    """MiniLM embedding throughput (texts/s) on lesson-like texts, for extrapolation."""
    texts = [" ".join(random.Random(i).sample(WORDS, 9)) for i in range(count)]
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:8])  # load
    t = time.perf_counter()
    embedder.embed(texts)
    return count / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--out", type=Path, default=Path("bench-results/consolidate.json"))
    parser.add_argument("--no-minilm", action="store_true", help="skip the MiniLM rate")
    parser.add_argument("--incremental", type=int, default=1000, help="new lessons, 2nd pass")
    parser.add_argument("--stores", type=Path, default=None, help="keep set-up stores here")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the temporary stores are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    console = Console(width=None if sys.stdout.isatty() else 160)
    results: list[dict[str, float | int | str]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            console.print(f"[dim]{n} lessons...[/]")
            results.append(
                bench_size(
                    n,
                    HashEmbedder(256),
                    Path(tmp),
                    console.print,
                    incremental=args.incremental,
                    cache=args.stores,
                )  # fmt: skip
            )
            # Written after every size, so a run stopped during a large size keeps the rest.
            write_results(args.out, results, None)
    rate = None if args.no_minilm else minilm_rate()
    console.print(results_table(results))
    if rate:
        console.print(f"MiniLM embedding: {rate:.0f} texts/s (embed phase at MiniLM = n / rate)")
    write_results(args.out, results, rate)
    console.print(f"wrote {args.out}")


def results_table(results: list[dict[str, float | int | str]]) -> Table:
    table = Table(title="consolidation (hashing embedder, no model; wall seconds, CPU seconds)")
    columns = ("lessons", "full pass", "CPU s", "cluster", "write", "merges", "x prev (CPU)",
               "n log n x", "purity", "dup", "search", "+new", "incr", "CPU s", "3rd")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    prev: dict[str, float | int | str] | None = None
    for r in results:
        n, full, cpu = float(r["lessons"]), float(r["full_s"]), float(r["full_cpu_s"])
        growth, nlogn = "-", "-"
        if prev:
            m = float(prev["lessons"])
            growth = f"{full / float(prev['full_s']):.1f} ({cpu / float(prev['full_cpu_s']):.1f})"
            nlogn = f"{n * math.log(n) / (m * math.log(m)):.1f}"
        prev = r
        table.add_row(
            str(r["lessons"]), f"{full:.2f}", f"{cpu:.2f}",
            f"{float(r['full_cluster_s']):.2f}", f"{float(r['full_write_s']):.2f}",
            str(r["full_merges"]), growth, nlogn, f"{float(r['full_purity']):.3f}",
            f"{float(r['full_duplicate_rate']):.3f}",
            f"{r['search_search']} {float(r['search_recall_at_10']):.2f}", str(r["incr_new"]),
            f"{float(r['incr_s']):.2f}", f"{float(r['incr_cpu_s']):.2f}", str(r["noop_merges"]),
        )  # fmt: skip
    return table


def write_results(
    out: Path, results: list[dict[str, float | int | str]], rate: float | None
) -> None:
    out.write_text(json.dumps({"results": results, "minilm_texts_per_s": rate}, indent=2))


if __name__ == "__main__":
    main()
