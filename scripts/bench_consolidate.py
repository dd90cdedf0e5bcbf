"""Benchmark consolidation: a full pass and an incremental pass at growing lesson counts.

    python scripts/bench_consolidate.py                 # 1k, 10k, 100k
    python scripts/bench_consolidate.py --sizes 1000 10000 --out bench-results/consolidate.json

Each size gets a fresh file store (SQLite + embedded chromadb). Lessons come in root-cause
groups of ~10 paraphrases spread over 5 scopes x 20 error types. Phases timed apart:
- setup: lessons written straight to SQL and the index (not part of consolidation);
- embed: root-cause vectors of every lesson (precomputed, cached in SQL);
- full pass: the first pass, where every lesson is new (deterministic canonicals, no model);
- incremental: 1 % new paraphrases added, embedded (timed apart) and consolidated.
The hashing embedder keeps embedding cheap so the pass itself is what is measured; the
MiniLM embedding rate is printed separately (texts/s) to extrapolate the embed phase.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memory.embeddings import Embedder, HashEmbedder, MiniLMEmbedder
from memory.export import header_line, import_lessons
from memory.store import Memory
from retrospectives.consolidate import ConsolidationConfig, Consolidator

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


def bench_size(
    n: int, embedder: Embedder, workdir: Path, say: Callable[[str], None]
) -> dict[str, float | int]:
    rng = random.Random(n)
    with Memory.open(str(workdir / f"store-{n}"), embedder=embedder) as memory:
        t = time.perf_counter()
        write_lessons(memory, make_lessons(n, rng))
        setup = time.perf_counter() - t
        say(f"  setup {setup:.1f}s")
        consolidator = Consolidator(memory, llm=None, config=ConsolidationConfig(threshold=0.6))
        t = time.perf_counter()
        embedded = memory.embed_root_causes()
        embed = time.perf_counter() - t
        say(f"  embed {embed:.1f}s")
        full = consolidator.run()
        full_s = full.seconds_cluster + full.seconds_write
        say(f"  full pass {full_s:.1f}s, merges {len(full.merges)}")
        extra = make_lessons(max(1, n // 100), rng, start=n)
        write_lessons(memory, extra)
        t = time.perf_counter()
        memory.embed_root_causes()
        embed_incr = time.perf_counter() - t
        incr = consolidator.run()
        noop = consolidator.run()
        return {
            "lessons": n,
            "setup_s": setup,
            "embed_s": embed,
            "embedded": embedded,
            "full_s": full.seconds_cluster + full.seconds_write,
            "full_cluster_s": full.seconds_cluster,
            "full_merges": len(full.merges),
            "incr_new": len(extra),
            "incr_embed_s": embed_incr,
            "incr_s": incr.seconds_cluster + incr.seconds_write,
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
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the temporary stores are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    console = Console()
    results: list[dict[str, float | int]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            console.print(f"[dim]{n} lessons...[/]")
            results.append(bench_size(n, HashEmbedder(256), Path(tmp), console.print))
            # Written after every size, so a run stopped during a large size keeps the rest.
            write_results(args.out, results, None)
    rate = None if args.no_minilm else minilm_rate()
    table = Table(title="consolidation (hashing embedder, no model; seconds)")
    for col in (
        "lessons",
        "embed",
        "full pass",
        "merges",
        "x prev",
        "+new",
        "incr embed",
        "incr pass",
        "incr merges",
        "3rd pass merges",
    ):
        table.add_column(col, justify="right")
    prev = None
    for r in results:
        growth = f"{r['full_s'] / prev:.1f}" if prev else "-"
        prev = float(r["full_s"])
        table.add_row(
            str(r["lessons"]),
            f"{r['embed_s']:.2f}",
            f"{r['full_s']:.2f}",
            str(r["full_merges"]),
            growth,
            str(r["incr_new"]),
            f"{r['incr_embed_s']:.2f}",
            f"{r['incr_s']:.2f}",
            str(r["incr_merges"]),
            str(r["noop_merges"]),
        )
    console.print(table)
    if rate:
        console.print(f"MiniLM embedding: {rate:.0f} texts/s (embed phase at MiniLM = n / rate)")
    write_results(args.out, results, rate)
    console.print(f"wrote {args.out}")


def write_results(out: Path, results: list[dict[str, float | int]], rate: float | None) -> None:
    out.write_text(json.dumps({"results": results, "minilm_texts_per_s": rate}, indent=2))


if __name__ == "__main__":
    main()
