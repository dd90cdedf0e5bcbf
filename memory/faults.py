"""Fault injection for tests and drills: damage a store the way crashes and lost indexes do.

A test double shipped in the package (like `HashEmbedder`), so tests outside memory/ can
exercise `Memory.check(repair=True)` and `reindex` without reaching into the store's SQL
or its vector index. Never used by lessonloop itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import text, update
from sqlmodel import col

from memory.index import lesson_metadata
from memory.migrate import VERSION_KEY
from memory.schema import INDEX_PENDING, LessonRow, MetaRow
from memory.store import Memory
from memory.types import LessonStatus


def lose_index_entries(memory: Memory, lesson_ids: Sequence[str]) -> None:
    """The index forgets these lessons while SQL still says they are indexed."""
    memory._index.delete(lesson_ids)


def drift_index_error_type(memory: Memory, lesson_id: str, error_type: str) -> None:
    """The index's metadata says `error_type` while SQL says otherwise."""
    lesson = memory.get(lesson_id)
    memory._index.update_metadata(
        [lesson_id], [lesson_metadata(lesson.scope, error_type, lesson.embedding_model)]
    )


def stale_index_status(memory: Memory, lesson_id: str, status: LessonStatus) -> None:
    """The entry carries a "status" key, as entries written before status left the index do
    (`memory.index`), saying `status` whatever SQL says."""
    lesson = memory.get(lesson_id)
    meta = lesson_metadata(lesson.scope, lesson.error_type, lesson.embedding_model)
    memory._index.update_metadata([lesson_id], [{**meta, "status": status}])


def index_metadata(memory: Memory, lesson_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """The index metadata of these lessons (those it holds)."""
    wanted = set(lesson_ids)
    return {i: meta for i, meta in memory._index.entries() if i in wanted}


def add_index_orphan(memory: Memory, lesson_id: str, *, scope: str = "default") -> None:
    """An index entry with no lesson in SQL (e.g. a lesson deleted before its index entry)."""
    vector = [1.0] + [0.0] * (memory._embedder.dim - 1)
    memory._index.upsert([lesson_id], [vector], [{"scope": scope}])


def leave_pending(memory: Memory, lesson_ids: Sequence[str]) -> None:
    """The state a crash between the SQL commit and the index write leaves behind."""
    with memory._db.write() as session:
        session.execute(
            update(LessonRow)
            .where(col(LessonRow.id).in_(list(lesson_ids)))
            .values(index_state=INDEX_PENDING)
        )


def wipe_index(memory: Memory) -> None:
    """Lose the whole vector index (SQL, the truth, is untouched)."""
    memory._index.reset()


def index_count(memory: Memory) -> int:
    """How many entries the vector index holds."""
    return memory._index.count()


def write_raw_vector(memory: Memory, lesson_id: str, vector: Sequence[float]) -> None:
    """Write a vector straight into the index, bypassing the store (dimension checks apply)."""
    memory._index.upsert([lesson_id], [list(vector)], [{"scope": "default"}])


def raw_collection(memory: Memory, scope: str = "default") -> Any:
    """The chromadb collection behind one scope (to prove chromadb never embeds by itself)."""
    return memory._index._scope(scope, create=True)


def record_schema_version(memory: Memory, version: int) -> None:
    """Record another schema version, as a newer (or older) lessonloop would have."""
    with memory._db.write() as session:
        session.merge(MetaRow(key=VERSION_KEY, value=str(version)))


_FAULT_SQL = {
    "sqlite": (
        [
            "CREATE TRIGGER lessonloop_fault_runs BEFORE UPDATE ON runs "
            "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
        ],
        ["DROP TRIGGER lessonloop_fault_runs"],
    ),
    "postgresql": (
        [
            "CREATE FUNCTION lessonloop_fault() RETURNS trigger AS $$ "
            "BEGIN RAISE EXCEPTION 'injected fault'; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER lessonloop_fault_runs BEFORE UPDATE ON runs "
            "FOR EACH ROW EXECUTE FUNCTION lessonloop_fault()",
        ],
        ["DROP TRIGGER lessonloop_fault_runs ON runs", "DROP FUNCTION lessonloop_fault()"],
    ),
}


@contextmanager
def failing_run_updates(memory: Memory) -> Iterator[None]:
    """While active, the database refuses every update of a run: an `add_many(...,
    run_id=...)` then fails after its lessons were inserted, in the same transaction (which
    rolls back). SQLite and PostgreSQL."""
    create, drop = _FAULT_SQL[memory._db.dialect]
    with memory._db.write() as session:
        for statement in create:
            session.execute(text(statement))
    try:
        yield
    finally:
        with memory._db.write() as session:
            for statement in drop:
                session.execute(text(statement))
