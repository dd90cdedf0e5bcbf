"""Benchmark the lesson console on a big store: page times of `lessonloop serve` over HTTP.

    nice -n 10 python scripts/bench_console.py                 # 100k lessons
    python scripts/bench_console.py --lessons 10000 --requests 20 --out bench-results/x.json

Builds a file store (SQLite + embedded chromadb, hashing embedder) of `--lessons` lessons
(bench_memory's templated lessons over 20 project scopes, a mix of statuses, created over
time), bulk-loaded as a restore through `memory.export.import_lessons` (setup only, not
what is measured), plus `--runs` finished runs that used lessons through the memory API (so
the lift and last-used columns have uses to read). Then starts the real `python -m agent
serve` on a free loopback port and times whole HTTP requests (server, SQL, templates) with a
warm server:
- the lessons list, first page (newest first);
- a deep page (offset ~ 95 % of the store);
- a filtered page (scope + status + error type);
- a search (recall in one scope: vector index + BM25, the ranking explained);
- a lesson's detail page, the review queue, the runs list;
- the health page (`stats --quality` over the whole store; timed with fewer requests).
Prints p50 / p95 ms per page and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory import LessonFilter, Memory  # noqa: E402
from memory.embeddings import resolve_embedder  # noqa: E402
from memory.export import header_line, import_lessons  # noqa: E402
from scripts._benchlib import write_json_atomic  # noqa: E402
from scripts._synthetic_lessons import generate  # noqa: E402

STATUSES = ["candidate"] * 60 + ["validated"] * 30 + ["deprecated"] * 8 + ["merged"] * 2
PAGE = 50


def bulk_write(memory: Memory, n: int, seed: int, say: bool) -> None:
    """Setup only: a restore through `memory.export.import_lessons` (statuses, counters and
    creation times kept verbatim, no dedup)."""
    rng = random.Random(seed)
    now = datetime.now(UTC)

    def lines() -> Iterator[str]:
        yield header_line()
        previous = None
        for k, d in enumerate(generate(n, seed)):
            lesson_id = f"les_{k:08d}{rng.getrandbits(32):08x}"
            status = rng.choice(STATUSES) if previous else "candidate"
            born = (now - timedelta(minutes=n - k)).isoformat()
            record = {
                "id": lesson_id,
                "scope": d.scope,
                "error_type": d.error_type,
                "symptom": d.symptom,
                "root_cause": d.root_cause,
                "fix": d.fix,
                "applies_when": d.applies_when,
                "evidence": [],
                "status": status,
                "seen": rng.randint(1, 5),
                "recalled": 0,
                "helped": 0,
                "misled": 0,
                # A merged lesson points at a canonical: the one written before it will do.
                "merged_into": previous if status == "merged" else None,
                "merged_from": [],
                "created_at": born,
                "updated_at": born,
                "embedding_model": "",
            }
            previous = lesson_id
            yield json.dumps(record)

    def progress(done: int) -> None:
        if say and done % 10_000 == 0:
            print(f"  wrote {done:,} lessons", flush=True)

    report = import_lessons(memory, lines(), progress=progress)
    if not report.ok:
        raise SystemExit(f"bench setup failed: {report.errors[:3]}")


def add_runs(memory: Memory, ids: list[str], runs: int, seed: int) -> None:
    """Finished runs that were given some of the newest lessons, through the memory API."""
    rng = random.Random(seed)
    for k in range(runs):
        run_id = f"bench-run-{k:05d}"
        memory.record_run(run_id, task_id=f"task-{k % 40}", scope=f"proj-{k % 20:02d}")
        memory.report_use(run_id, "seed", rng.sample(ids, 3))
        memory.finish_run(run_id, rng.random() < 0.6, rounds=rng.randint(1, 3))


def start_console(store: Path, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m agent serve` on a free loopback port; returns the process and its URL."""
    log = home / "console.log"
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LESSONLOOP_HOME": str(home), "LESSONLOOP_EMBEDDER": "hash"}
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "serve", "--memory", str(store)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = re.search(r"lessonloop console on (http://\S+)", log.read_text())
        if found:
            return proc, found.group(1).rstrip("/")
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the console did not start: {log.read_text()}")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def time_page(client: httpx.Client, url: str, requests: int) -> dict[str, float]:
    """p50 / p95 / max ms of `requests` GETs of `url` after one warm-up request."""
    first = client.get(url)
    first.raise_for_status()
    times = []
    for _ in range(requests):
        t = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - t) * 1000)
        response.raise_for_status()
    return {
        "p50_ms": round(pct(times, 0.5), 1),
        "p95_ms": round(pct(times, 0.95), 1),
        "max_ms": round(max(times), 1),
        "bytes": len(first.content),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lessons", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--health-requests", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "bench_console.json")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the store here")
    parser.add_argument("--reuse", action="store_true", help="time the store in --workdir again")
    args = parser.parse_args(argv)
    if args.reuse and args.workdir is None:
        parser.error("--reuse needs --workdir")
    tmp = None if args.workdir else tempfile.TemporaryDirectory(prefix="bench-console-")
    work = args.workdir or Path(tmp.name)  # type: ignore[union-attr]
    store, home = work / "store", work / "home"
    t = time.perf_counter()
    with Memory.open(str(store), embedder=resolve_embedder("hash")) as memory:
        if not args.reuse:
            bulk_write(memory, args.lessons, args.seed, say=True)
            ids = [lesson.id for lesson in memory.list_lessons(LessonFilter(limit=5000)).items]
            add_runs(memory, ids, args.runs, args.seed)
        newest = memory.list_lessons(LessonFilter(limit=1)).items[0].id
        total = memory.list_lessons(LessonFilter(limit=1)).total
    setup_s = time.perf_counter() - t
    print(f"store: {total:,} lessons, {args.runs} runs, built in {setup_s:.0f} s", flush=True)
    deep = (int(total * 0.95) // PAGE) + 1
    pages = {
        "list_first_page": "/lessons",
        "list_deep_page": f"/lessons?page={deep}",
        "list_filtered": "/lessons?scope=proj-03&status=validated&error_type=check_failed",
        "search": "/lessons?scope=proj-03&q=ValueError+could+not+convert+string+to+float+price",
        "lesson_detail": f"/lessons/{newest}",
        "review": "/review",
        "runs": "/runs",
    }
    load_before = os.getloadavg()[0]
    proc, base = start_console(store, home)
    try:
        with httpx.Client(timeout=900) as client:
            results = {
                name: time_page(client, base + path, args.requests) for name, path in pages.items()
            }
            hits = client.get(base + pages["search"]).text.count('class="hit"')
            # The hygiene figures read every lesson (duplicates are O(n^2) per scope): few runs.
            pages["health"] = "/health"
            results["health"] = time_page(client, base + "/health", args.health_requests)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if tmp is not None:
            tmp.cleanup()
    print(f"{'page':<18} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, r in results.items():
        print(f"{name:<18} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['max_ms']:>8.1f}")
    load_after = os.getloadavg()[0]
    print(f"search returned {hits} lessons; load average {load_before:.1f} -> {load_after:.1f}")
    write_json_atomic(
        args.out,
        {
            "benchmark": "bench_console",
            "lessons": total,
            "runs": args.runs,
            "requests_per_page": args.requests,
            "setup_s": round(setup_s, 1),
            "search_hits": hits,
            "pages": {name: {"path": pages[name], **r} for name, r in results.items()},
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                # Shared machines: page times move with the load; compare runs at like load.
                "load_average_1m": [round(load_before, 2), round(load_after, 2)],
            },
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
