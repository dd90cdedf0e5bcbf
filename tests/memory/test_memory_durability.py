"""Crash between the SQL commit and the index write; several processes writing at once."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memory_servers import SERVER_MARKS, StoreSpec, make_spec

from memory import (
    HashEmbedder,
    IndexBehindError,
    LessonDraft,
    LessonFilter,
    LessonQuery,
    Memory,
    faults,
)

REPO = Path(__file__).resolve().parents[2]

CRASHING_CHILD = """
import os, sys
from memory import HashEmbedder, LessonDraft, Memory

url, chroma_url, collection = sys.argv[1], sys.argv[2] or None, sys.argv[3]
memory = Memory.open(
    url,
    embedder=HashEmbedder(),
    chroma_url=chroma_url,
    collection=collection,
    # Die like a killed process: no cleanup, no index write, no "indexed" mark.
    after_sql_commit=lambda ids: os._exit(17),
)
memory.add(LessonDraft(error_type="runtime_error", symptom="zebra yak xylophone crashed",
                       root_cause="walrus vulture umbrella", fix="tiger sloth raven"))
raise SystemExit("unreachable: the hook should have killed this process")
"""


def test_crash_after_sql_commit_is_repaired(spec: StoreSpec) -> None:
    spec.open().close()  # create the store up front, as a long-running service would have
    child = subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, spec.url, spec.chroma_url or "", spec.collection],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 17, child.stderr
    memory = spec.open()
    try:
        (lesson,) = memory.list_lessons().items  # SQL has it: it is the source of truth
        q = LessonQuery(text="zebra yak xylophone walrus")
        assert memory.recall(q) == []  # ... but the index never got it
        report = memory.check()
        assert report.pending == (lesson.id,) and not report.repaired
        assert memory.check(repair=True).repaired
        assert memory.check().clean
        assert [s.lesson.id for s in memory.recall(q)] == [lesson.id]
    finally:
        memory.close()


WORKERS = 4
PER_WORKER = 25
SHARED = 5  # every worker adds these same 5 lessons: they must end up stored once each


def _draft(n: int) -> LessonDraft:
    return LessonDraft(
        scope="team",
        error_type="runtime_error",
        symptom=f"sym{n}a sym{n}b sym{n}c",
        root_cause=f"cause{n}a cause{n}b cause{n}c",
        fix=f"fix{n}a fix{n}b fix{n}c",
    )


def _worker(spec: StoreSpec, worker: int, start_at: float) -> int:
    memory = spec.open()
    drafts = [_draft(9000 + j) for j in range(SHARED)]
    drafts += [_draft(worker * 100 + i) for i in range(PER_WORKER - SHARED)]
    time.sleep(max(0.0, start_at - time.time()))  # start together: maximise contention
    created = 0
    for d in drafts:
        created += memory.add(d).action == "created"
    memory.close()
    return created


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("postgres", marks=SERVER_MARKS),
        pytest.param("sqlite-server", marks=SERVER_MARKS),
    ],
)
def test_concurrent_writers_lose_and_duplicate_nothing(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    spec = make_spec(kind, request, tmp_path)
    spec.open().close()
    ctx = multiprocessing.get_context("spawn")  # fork + chromadb/torch threads is unsafe
    start_at = time.time() + 8
    with ctx.Pool(WORKERS) as pool:
        created = pool.starmap(_worker, [(spec, w, start_at) for w in range(WORKERS)])
    expected = WORKERS * (PER_WORKER - SHARED) + SHARED
    assert sum(created) == expected
    memory = spec.open()
    try:
        page = memory.list_lessons(LessonFilter(limit=1000))
        assert page.total == expected
        root_causes = [lesson.root_cause for lesson in page.items]
        assert len(set(root_causes)) == expected  # no duplicates
        shared = [lesson for lesson in page.items if lesson.root_cause.startswith("cause90")]
        assert sorted(lesson.seen for lesson in shared) == [WORKERS] * SHARED
        assert faults.index_count(memory) == expected
        assert memory.check().clean
    finally:
        memory.close()


def test_in_memory_store_is_isolated() -> None:
    a, b = Memory.in_memory(), Memory.in_memory(HashEmbedder(dim=64))
    try:
        a.add(_draft(1))
        assert b.list_lessons().total == 0
        assert b.recall(LessonQuery(text="sym1a sym1b cause1a", scope="team")) == []
        assert len(a.recall(LessonQuery(text="sym1a sym1b cause1a", scope="team"))) == 1
    finally:
        a.close()
        b.close()


def test_an_index_that_goes_away_after_the_commit_says_the_lesson_is_stored(
    tmp_path: Path,
) -> None:
    """The chroma directory removed under an open store: the write is committed in SQL, and
    the error says so (a "retry later" made a caller write it twice)."""
    first = LessonDraft(error_type="ValueError", symptom="alpha bravo", root_cause="c d", fix="e")
    second = LessonDraft(error_type="KeyError", symptom="golf hotel", root_cause="i j", fix="k")
    store = Memory.open(tmp_path / "mem", embedder=HashEmbedder())
    try:
        store.add(first)
        shutil.rmtree(tmp_path / "mem" / "chroma")
        with pytest.raises(IndexBehindError, match=r"written to SQL \(1 lesson\(s\)\)"):
            store.add(second)
    finally:
        store.close()
    with Memory.open(tmp_path / "mem", embedder=HashEmbedder()) as again:
        again.check(repair=True)
        assert again.check().clean
        stored = again.list_lessons(LessonFilter()).items
        assert sorted(x.symptom for x in stored) == ["alpha bravo", "golf hotel"]
        hits = again.recall(LessonQuery(text="golf hotel", error_types=("KeyError",)))
        assert [h.lesson.symptom for h in hits] == ["golf hotel"]
