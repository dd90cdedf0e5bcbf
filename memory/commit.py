"""The one rule that keeps SQL and the vector index in step: commit SQL, write the index,
mark the rows indexed.

Every lesson write (add, edit, status change, import, merge, undo) goes through
`write_through`: the SQL transaction commits first with the rows it touched at
`index_state="pending"`; the index is written after the commit; then the rows are marked
"indexed". A crash in between leaves pending rows (or stale index metadata) that
`Memory.check(repair=True)` finishes, and recall reads status from SQL, so nothing wrong is
recalled meanwhile. The repair and rebuild paths, whose SQL is already committed, use the
second half alone (`apply_to_index`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from sqlalchemy import update
from sqlmodel import Session, col

from memory.db import Database
from memory.dedup import index_text
from memory.embeddings import Embedder
from memory.errors import IndexBehindError, MemoryBackendError
from memory.index import LessonIndex, Metadata, lesson_metadata
from memory.schema import INDEX_DONE, INDEX_PENDING, LessonRow

T = TypeVar("T")
AfterCommitHook = Callable[[Sequence[str]], None]
_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement


class Indexable(Protocol):
    """What the index needs of a lesson: a `LessonRow`, or an `IndexEntry` where a bulk
    write builds no ORM row (one costs ~0.2 ms to construct)."""

    @property
    def id(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def error_type(self) -> str: ...
    @property
    def embedding_model(self) -> str: ...
    @property
    def symptom(self) -> str: ...
    @property
    def root_cause(self) -> str: ...


@dataclass(frozen=True)
class IndexEntry:
    """The index's view of a lesson, without an ORM row."""

    id: str
    scope: str
    error_type: str
    embedding_model: str
    symptom: str
    root_cause: str


def metadata_of(row: Indexable) -> Metadata:
    """The index metadata SQL says a lesson should have."""
    return lesson_metadata(row.scope, row.error_type, row.embedding_model)


@dataclass
class IndexChanges:
    """What the index must do after a commit.

    `upsert`: rows to (re)write with their vectors (`vectors[row.id]`, else embedded from
    their index text), marked indexed after;
    `metadata`: rows whose index metadata drifted from SQL but whose vector did not (a
    repair; a status change writes nothing to the index, see `memory.index`);
    `delete`: ids to remove (deleted lessons, or ones that moved to another scope).
    """

    upsert: list[Indexable] = field(default_factory=list)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    metadata: list[Indexable] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    def extend(self, other: IndexChanges) -> None:
        """Add another write's changes (for one index batch after several commits)."""
        self.upsert.extend(other.upsert)
        self.vectors.update(other.vectors)
        self.metadata.extend(other.metadata)
        self.delete.extend(other.delete)


@dataclass
class Written(Generic[T]):
    """What a SQL write returns to `write_through`: its result, the index changes, and what
    to run once its transaction has committed (e.g. bring a cache up to date)."""

    value: T
    changes: IndexChanges = field(default_factory=IndexChanges)
    on_commit: Callable[[], None] | None = None


def write_through(
    db: Database,
    index: LessonIndex,
    write: Callable[[Session], Written[T]],
    *,
    lock_scope: str | None = None,
    embedder: Embedder | None = None,
) -> T:
    """Run `write` in one SQL transaction, then bring the index up to date, then mark it.

    Rows in `changes.upsert` must be left at `index_state="pending"` by `write`; those
    without a vector in `changes.vectors` are embedded with `embedder` after the commit.
    """
    return write_through_each(db, index, [(lock_scope, write)], embedder=embedder)[0]


def write_through_each(
    db: Database,
    index: LessonIndex,
    writes: Sequence[tuple[str | None, Callable[[Session], Written[T]]]],
    *,
    embedder: Embedder | None = None,
    after_commit: AfterCommitHook | None = None,
) -> list[T]:
    """`write_through` for several writes, each its own transaction (with its lock scope),
    then one index batch for all of them: a crash keeps every write committed before it.

    `after_commit` (a fault-injection point for tests) runs between the commits and the
    index write.
    """
    values: list[T] = []
    changes = IndexChanges()
    for lock_scope, write in writes:
        with db.write(lock_scope) as session:
            written = write(session)
        if written.on_commit is not None:
            written.on_commit()
        values.append(written.value)
        changes.extend(written.changes)
    if after_commit is not None and changes.upsert:
        after_commit([row.id for row in changes.upsert])
    try:
        apply_to_index(db, index, changes, embedder=embedder)
    except MemoryBackendError as exc:
        ids = [row.id for row in changes.upsert]
        raise IndexBehindError(
            f"written to SQL ({len(ids)} lesson(s)), but bringing the vector index up to date "
            f"failed: {exc}; they stay pending, not found by recall, until "
            "`lessonloop memory check --repair` (do not write them again)"
        ) from exc
    return values


def apply_to_index(
    db: Database, index: LessonIndex, changes: IndexChanges, *, embedder: Embedder | None = None
) -> None:
    """The second half of `write_through`, for SQL that is already committed."""
    if changes.delete:
        index.delete(changes.delete)
    rows = changes.upsert
    vectors = dict(changes.vectors)
    unembedded = [r for r in rows if r.id not in vectors]
    if unembedded:
        if embedder is None:
            raise ValueError("rows without vectors need an embedder")  # our bug, not the user's
        texts = [index_text(r.symptom, r.root_cause) for r in unembedded]
        vectors.update(vectors_by_id(unembedded, embedder.embed(texts)))
    if rows:
        index.upsert(
            ids=[r.id for r in rows],
            vectors=[vectors[r.id] for r in rows],
            metadatas=[metadata_of(r) for r in rows],
        )
    if changes.metadata:
        index.update_metadata(
            [r.id for r in changes.metadata], [metadata_of(r) for r in changes.metadata]
        )
    mark_indexed(db, [r.id for r in rows])


def mark_indexed(db: Database, ids: Sequence[str]) -> None:
    """Pending rows among `ids` are now in the index."""
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        with db.write() as session:
            session.execute(
                update(LessonRow)
                .where(col(LessonRow.id).in_(chunk))
                .where(col(LessonRow.index_state) == INDEX_PENDING)
                .values(index_state=INDEX_DONE)
            )


def vectors_by_id(
    rows: Sequence[Indexable], vectors: Sequence[list[float]]
) -> dict[str, list[float]]:
    """`{row.id: vector}` for rows and vectors in the same order."""
    return {r.id: v for r, v in zip(rows, vectors, strict=True)}
