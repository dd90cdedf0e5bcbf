"""Crash consistency: kill -9 a memory writer at random points, repair, count what broke.

    python scripts/bench_crash.py [--kills 100] [--seed 1] [--out bench-results/crash.json]

Each iteration starts scripts/crash_writer.py on one file store (SQLite + embedded
chromadb, accumulating over the iterations) and kills it with SIGKILL: either after a random
delay (the writer is then mid-add, mid-import, mid-merge or mid-undo: whatever its last
BEGIN line says), or, one time in four, from inside the memory's after-SQL-commit hook (the
moment between the SQL commit and the index write). Then `python -m agent memory check
--repair` runs as a user would, an import that was cut is run again, and the store is
checked:

- lost: a lesson the writer was told was added (ADD line), or a line of an import file
  after its re-run, that is not in the store;
- orphans / drift: `Memory.check()` not clean after the repair (index entries without a
  lesson, lessons missing from the index, pending index writes, metadata drift);
- half-applied merges: a merge record whose members do not all point at its canonical (or
  an undone one whose canonical is still there), a merged lesson whose canonical does not
  list it, a canonical listing a member that does not point back.

tests/test_crash_consistency.py runs a few iterations with the same checks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from memory import HashEmbedder, Lesson, LessonFilter, Memory
from memory.export import import_lessons
from scripts._benchlib import REPO, write_json_atomic

WRITER = Path(__file__).resolve().parent / "crash_writer.py"
ALL = ("candidate", "validated", "deprecated", "merged")
ENV = {
    **os.environ,
    "LESSONLOOP_EMBEDDER": "hash",
    "ANONYMIZED_TELEMETRY": "False",
    "PYTHONPATH": str(REPO),
}


class Kill(BaseModel):
    """One kill and what the checks found after the repair."""

    model_config = ConfigDict(frozen=True)

    iteration: int
    mode: str  # "random" or "after-commit"
    phase: str  # the writer's last BEGIN: add, import, merge, undo (or "start")
    acked: int  # ADD lines of this writer
    drift_before: int  # index drift the kill left (what the repair had to fix)
    repair_exit: int
    lost: tuple[str, ...]
    drift: tuple[str, ...]
    half_merges: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.repair_exit == 0 and not (self.lost or self.drift or self.half_merges)


class CrashReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    store: str  # "file" or "postgres"
    kills: int
    by_phase: dict[str, int]
    lessons_at_end: int
    merges_at_end: int
    lost: int
    orphans_or_drift: int
    half_applied_merges: int
    failed_repairs: int
    kills_that_left_drift: int  # before the repair
    failures: tuple[Kill, ...]
    seconds: float


@dataclass(frozen=True)
class Target:
    """The store under test: a file store path, or a server URL + Chroma server."""

    store: str
    work: Path  # where the writers' import files go
    chroma_url: str | None = None

    @property
    def env(self) -> dict[str, str]:
        return {**ENV, "LESSONLOOP_CHROMA_URL": self.chroma_url} if self.chroma_url else ENV


def _open(target: Target) -> Memory:
    return Memory.open(target.store, embedder=HashEmbedder(), chroma_url=target.chroma_url)


def all_lessons(memory: Memory) -> dict[str, Lesson]:
    found: dict[str, Lesson] = {}
    offset = 0
    while True:
        page = memory.list_lessons(LessonFilter(status=ALL, limit=1000, offset=offset))
        found.update((x.id, x) for x in page.items)
        offset += len(page.items)
        if offset >= page.total or not page.items:
            return found


def merge_records(memory: Memory) -> list[tuple[str, str, tuple[str, ...], bool, bool]]:
    """(id, canonical, members, created canonical, undone) of every merge."""
    records = memory.list_merges(limit=1_000_000)
    return [
        (r.id, r.canonical_id, r.member_ids, r.created_canonical, r.undone_at is not None)
        for r in records
    ]


def half_applied(memory: Memory, lessons: dict[str, Lesson]) -> list[str]:
    problems = []
    for lesson in lessons.values():
        if lesson.status == "merged":
            canonical = lessons.get(lesson.merged_into or "")
            if canonical is None or lesson.id not in canonical.merged_from:
                problems.append(f"{lesson.id} merged into {lesson.merged_into}, not listed there")
        for member in lesson.merged_from:
            if member in lessons and lessons[member].merged_into not in (lesson.id, None):
                problems.append(f"{lesson.id} lists {member}, which points elsewhere")
    for merge_id, canonical_id, members, created, undone in merge_records(memory):
        if undone:
            if created and canonical_id in lessons:
                problems.append(f"undone {merge_id} left its canonical {canonical_id}")
            continue
        if canonical_id not in lessons:
            problems.append(f"{merge_id}: canonical {canonical_id} missing")
        for member in members:
            if member not in lessons or lessons[member].merged_into != canonical_id:
                problems.append(f"{merge_id}: member {member} does not point at {canonical_id}")
    return problems


def _writer_lines(
    target: Target, seed: int, die_after: int, rng: random.Random
) -> tuple[list[str], bool]:
    """The writer's output lines, and whether it died in its after-commit hook."""
    hooked = bool(die_after)
    cmd = [sys.executable, str(WRITER), target.store, str(seed), "--work", str(target.work)]
    if target.chroma_url:
        cmd += ["--chroma-url", target.chroma_url]
    if die_after:
        cmd += ["--die-after-commit", str(die_after)]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=ENV)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if not first.startswith("READY"):
            proc.kill()
            proc.wait()
            err.seek(0)
            raise RuntimeError(f"writer did not start: {first!r} {err.read()[-2000:]}")
        if die_after:
            try:
                proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()  # the Nth commit never came: a kill at a random point after all
                hooked = False
        else:
            time.sleep(rng.uniform(0.02, 2.0))
            proc.kill()  # SIGKILL
        # Read through the same buffered stream as READY: what readline buffered counts too.
        lines = proc.stdout.read().splitlines()
        proc.stdout.close()
        proc.wait()
        if proc.returncode != -9:
            err.seek(0)
            raise RuntimeError(f"writer ended with {proc.returncode}: {err.read()[-2000:]}")
    return lines, hooked


def repair(target: Target) -> int:
    cmd = [sys.executable, "-m", "agent", "memory", "--memory", target.store, "check", "--repair"]
    return subprocess.run(cmd, capture_output=True, text=True, env=target.env, cwd=REPO).returncode


def one_kill(
    target: Target,
    iteration: int,
    rng: random.Random,
    acked: set[str],
    die_after: int | None = None,
) -> Kill:
    """Start a writer, kill it, repair, re-run a cut import, check everything.

    `die_after`: kill in the Nth after-SQL-commit hook; 0: after a random delay; None: pick
    one of the two (a quarter of the kills in the hook).
    """
    if die_after is None:
        die_after = rng.randint(1, 6) if rng.random() < 0.25 else 0
    lines, hooked = _writer_lines(target, rng.getrandbits(32), die_after, rng)
    mine = {line.split()[1] for line in lines if line.startswith("ADD ")}
    acked |= mine
    begins = [line.split()[1] for line in lines if line.startswith("BEGIN ")]
    started = [line.split()[1] for line in lines if line.startswith("IMPORT-START ")]
    done = {line.split()[1] for line in lines if line.startswith("IMPORT-DONE ")}
    with _open(target) as memory:
        before = memory.check()
    drift_before = len(before.pending) + len(before.missing_in_index) + len(before.orphans_in_index)
    exit_code = repair(target)
    with _open(target) as memory:
        lost: list[str] = []
        for path in (p for p in started if p not in done):
            with open(path) as cut:
                import_lessons(memory, cut)
        report = memory.check()
        lessons = all_lessons(memory)
        for path in started:
            for line in Path(path).read_text().splitlines()[1:]:
                acked.add(json.loads(line)["id"])
        lost = sorted(i for i in acked if i not in lessons)
        drift = (
            *report.pending,
            *report.missing_in_index,
            *report.orphans_in_index,
            *report.metadata_drift,
        )
        half = half_applied(memory, lessons)
    return Kill(
        iteration=iteration,
        mode="after-commit" if hooked else "random",
        phase=begins[-1] if begins else "start",
        acked=len(mine),
        drift_before=drift_before,
        repair_exit=exit_code,
        lost=tuple(lost),
        drift=tuple(drift),
        half_merges=tuple(half),
    )


def file_target(root: Path) -> Target:
    """A fresh file store (SQLite + embedded chromadb) under `root`."""
    (root / "store").mkdir(parents=True, exist_ok=True)
    return Target(store=str(root / "store" / "memory"), work=root / "imports")


def run(
    target: Target, kills: int, seed: int = 1, progress: bool = False, out: Path | None = None
) -> CrashReport:
    """`kills` iterations on one store; with `out`, the figures so far are saved after each."""
    started = time.perf_counter()
    rng = random.Random(seed)
    acked: set[str] = set()
    results: list[Kill] = []
    report = _report(target, results, started)
    for i in range(kills):
        results.append(one_kill(target, i, rng, acked))
        if progress:
            r = results[-1]
            print(f"kill {i + 1}/{kills}: {r.mode} {r.phase} ok={r.ok}", flush=True)
        report = _report(target, results, started)
        if out is not None:
            write_json_atomic(out, report.model_dump(mode="json"))
    return report


def _report(target: Target, results: list[Kill], started: float) -> CrashReport:
    with _open(target) as memory:
        lessons = all_lessons(memory)
        merges = len(merge_records(memory))
    return CrashReport(
        store="postgres" if target.chroma_url else "file",
        kills=len(results),
        by_phase=dict(sorted(Counter(f"{r.mode}:{r.phase}" for r in results).items())),
        lessons_at_end=len(lessons),
        merges_at_end=merges,
        lost=sum(len(r.lost) for r in results),
        orphans_or_drift=sum(len(r.drift) for r in results),
        half_applied_merges=sum(len(r.half_merges) for r in results),
        failed_repairs=sum(r.repair_exit != 0 for r in results),
        kills_that_left_drift=sum(r.drift_before > 0 for r in results),
        failures=tuple(r for r in results if not r.ok),
        seconds=round(time.perf_counter() - started, 1),
    )


def _run_on_servers(root: Path, kills: int, seed: int, out: Path) -> CrashReport:
    sys.path.insert(0, str(REPO / "tests" / "memory"))
    from memory_servers import start_chroma, start_postgres

    pg, chroma = start_postgres(), start_chroma()
    try:
        url = pg.create_database("crash")
        (root / "imports").mkdir()
        target = Target(store=url, work=root / "imports", chroma_url=chroma.url)
        return run(target, kills, seed, progress=True, out=out)
    finally:
        chroma.stop()
        pg.stop()


def _print(report: CrashReport) -> None:
    console = Console()
    table = Table(title=f"kill -9 during memory writes ({report.store} store)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name in (
        "kills",
        "lessons_at_end",
        "merges_at_end",
        "lost",
        "orphans_or_drift",
        "half_applied_merges",
        "failed_repairs",
        "kills_that_left_drift",
        "seconds",
    ):
        table.add_row(name, str(getattr(report, name)))
    console.print(table)
    console.print(", ".join(f"{k} {v}" for k, v in report.by_phase.items()))
    for failure in report.failures[:10]:
        console.print(f"FAILED {failure}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="PostgreSQL + a Chroma server (started here) instead of the file store",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "crash.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lessonloop-crash-") as tmp:
        if args.postgres:
            report = _run_on_servers(Path(tmp), args.kills, args.seed, args.out)
        else:
            target = file_target(Path(tmp))
            report = run(target, args.kills, args.seed, progress=True, out=args.out)
    _print(report)
    write_json_atomic(args.out, report.model_dump(mode="json"))
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
