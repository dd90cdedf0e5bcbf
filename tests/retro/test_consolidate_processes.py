"""Two consolidators in two OS processes on one SQLite + chromadb file store, at once.

The lease (`Memory.acquire_lease`) lets exactly one of them run the pass and refuses the other, so
the store ends exactly as after one pass: the same merges (compared with one pass on a
copy of the store), no lesson in two merges, SQL and the index in agreement.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory.embeddings import HashEmbedder
from memory.merges import MergeRecord
from memory.store import Memory
from memory.types import LessonFilter
from retrospectives.consolidate import Consolidator
from tests.retro import race_worker
from tests.retro.labelled import labelled_set

ROOT = Path(__file__).resolve().parents[2]
Outcome = dict[frozenset[str], tuple[str, str]]  # member ids -> canonical (root cause, fix)


def seed(path: Path) -> int:
    with Memory.open(str(path), embedder=HashEmbedder(), dedup_similarity=1.01) as memory:
        added = memory.add_many([item.draft for item in labelled_set()])
    return sum(a.action == "created" for a in added)


def race(store: Path, barrier: Path, parties: int) -> list[dict[str, Any]]:
    barrier.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.retro.race_worker", str(store), str(barrier)]
            + [f"w{n}", str(parties)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(parties)
    ]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
        results.append(json.loads(stdout))
    return results


def outcome(memory: Memory, records: list[MergeRecord]) -> Outcome:
    """What the merges produced, keyed by member ids (canonical ids are fresh per pass)."""
    out: Outcome = {}
    for record in records:
        canonical = memory.get(record.canonical_id)
        out[frozenset(record.member_ids)] = (canonical.root_cause, canonical.fix)
    return out


def test_two_processes_at_once_merge_exactly_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    created = seed(store)
    reference = tmp_path / "reference"
    shutil.copytree(store, reference)

    results = race(store, tmp_path / "barrier", 2)

    timeline = sorted((r["started"], r["finished"], r["name"], r["outcome"]) for r in results)
    # The lease: one pass ran, the other was refused while it held the lease.
    assert sorted(r["outcome"] for r in results) == ["busy", "ran"], timeline
    (ran,) = [r for r in results if r["outcome"] == "ran"]

    with Memory.open(str(reference), embedder=HashEmbedder()) as memory:
        single = Consolidator(memory, llm=None, config=race_worker.CONFIG).run()
        expected = outcome(memory, list(single.merges))
    assert expected  # the labelled set has duplicates to merge

    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        records = [r for r in memory.list_merges(limit=10_000) if r.undone_at is None]
        assert sorted(r.id for r in records) == sorted(ran["merges"])
        # No lesson merged twice, and every record agrees with the lessons it names.
        members = [m for r in records for m in r.member_ids]
        assert len(members) == len(set(members))
        for record in records:
            canonical = memory.get(record.canonical_id)
            assert canonical.status != "merged" and record.created_canonical
            assert set(record.member_ids) <= set(canonical.merged_from)
            for member_id in record.member_ids:
                member = memory.get(member_id)
                assert member.status == "merged" and member.merged_into == record.canonical_id
        # Exactly what one pass does on the same lessons.
        assert outcome(memory, records) == expected
        lessons = memory.list_lessons(LessonFilter(limit=1000)).items
        assert len(lessons) == created + len(records)
        assert memory.unprocessed_count() == 0
        assert memory.check().clean
