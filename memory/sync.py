"""Keep the derived vector index in step with SQL: drift check, repair, full rebuild."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from sqlalchemy import func, update
from sqlmodel import col, select

from memory.commit import IndexChanges, apply_to_index, metadata_of, vectors_by_id
from memory.db import Database
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder
from memory.errors import MemoryUsageError
from memory.index import LessonIndex, Metadata
from memory.schema import INDEX_PENDING, LessonRow
from memory.types import DriftReport

Progress = Callable[[int, int], None]  # (done, total)
_PAGE = 256


def _rows_by_id(db: Database, ids: Sequence[str]) -> list[LessonRow]:
    rows: list[LessonRow] = []
    with db.read() as session:
        for start in range(0, len(ids), _PAGE):
            chunk = list(ids[start : start + _PAGE])
            rows.extend(session.exec(select(LessonRow).where(col(LessonRow.id).in_(chunk))).all())
    return rows


def _all_rows(db: Database) -> Iterator[list[LessonRow]]:
    # Keyset pagination: stable under concurrent inserts, constant memory.
    last = ""
    while True:
        with db.read() as session:
            page = list(
                session.exec(
                    select(LessonRow)
                    .where(LessonRow.id > last)
                    .order_by(col(LessonRow.id))
                    .limit(_PAGE)
                ).all()
            )
        if not page:
            return
        yield page
        last = page[-1].id


def _drifted(got: Mapping[str, str], expected: Mapping[str, str]) -> bool:
    # Only the keys the index keeps: an entry written before status left the index still
    # carries one ("status"), which nothing reads (`memory.index`).
    return any(got.get(key) != value for key, value in expected.items())


def lag(db: Database, index: LessonIndex) -> tuple[int, int]:
    """(rows whose index write never finished, lessons beyond the index's entry count): what
    recall may not find until `check(repair=True)`. Two SQL counts and the index's count:
    cheap, but not free against a Chroma server with many scopes (a call per scope)."""
    with db.read() as session:
        pending = session.exec(
            select(func.count())
            .select_from(LessonRow)
            .where(LessonRow.index_state == INDEX_PENDING)
        ).one()
        total = session.exec(select(func.count()).select_from(LessonRow)).one()
    return pending, max(0, total - index.count())


def check(db: Database, index: LessonIndex, embedder: Embedder, *, repair: bool) -> DriftReport:
    """Compare SQL and the index; with `repair`, make the index match SQL."""
    # Index first, SQL second: a lesson committed in between is then "missing" (harmless to
    # re-add), never a false "orphan" (which repair would delete).
    in_index: dict[str, Metadata] = {}
    copies: set[str] = set()  # ids in more than one scope's collection (a stale copy)
    for lesson_id, meta in index.entries():
        if lesson_id in in_index:
            copies.add(lesson_id)
        in_index[lesson_id] = meta
    pending: list[str] = []
    missing: list[str] = []
    drift: list[str] = []
    sql_ids: set[str] = set()
    for page in _all_rows(db):
        for row in page:
            sql_ids.add(row.id)
            if row.index_state == INDEX_PENDING:
                pending.append(row.id)
            elif row.id not in in_index:
                missing.append(row.id)
            elif row.id in copies or in_index[row.id].get("scope") != row.scope:
                missing.append(row.id)  # in a wrong scope's collection: re-add it
            elif _drifted(in_index[row.id], metadata_of(row)):
                drift.append(row.id)
    orphans = sorted(set(in_index) - sql_ids)
    if repair and orphans and not sql_ids:
        raise MemoryUsageError(
            f"SQL holds no lessons but the index holds {len(orphans)}: the database file "
            "looks wrong or damaged, and repairing would empty the index. Restore the "
            "database file, or run `lessonloop memory reindex` to rebuild the index from "
            "this empty database on purpose"
        )
    if repair:
        to_index = _rows_by_id(db, pending + missing)
        vectors = embedder.embed([index_text(r.symptom, r.root_cause) for r in to_index])
        changes = IndexChanges(
            upsert=[*to_index],
            vectors=vectors_by_id(to_index, vectors),
            metadata=[*_rows_by_id(db, drift)],
            # Lessons indexed in a wrong scope's collection are re-added after the delete
            # (which removes an id from every collection); a pending lesson may have moved
            # scope in the write that never finished, so its old entry goes too.
            delete=[i for i in pending + missing if i in in_index] + orphans,
        )
        apply_to_index(db, index, changes)
    return DriftReport(
        pending=tuple(pending),
        missing_in_index=tuple(missing),
        orphans_in_index=tuple(orphans),
        metadata_drift=tuple(drift),
        repaired=repair,
    )


def reindex(
    db: Database,
    index: LessonIndex,
    embedder: Embedder,
    *,
    reembed: bool = False,
    progress: Progress | None = None,
) -> int:
    """Rebuild the index from SQL; with `reembed`, also recompute dedup vectors (model change).

    Returns the number of lessons indexed.
    """
    index.reset()
    with db.read() as session:
        total = session.exec(select(func.count()).select_from(LessonRow)).one()
    done = 0
    for page in _all_rows(db):
        if reembed:
            dedup = embedder.embed([dedup_text(r.root_cause, r.fix) for r in page])
            with db.write() as session:
                for row, vec in zip(page, dedup, strict=True):
                    session.execute(
                        update(LessonRow)
                        .where(col(LessonRow.id) == row.id)
                        .values(
                            dedup_vector=pack(vec),
                            embedding_model=embedder.model_id,
                            index_state=INDEX_PENDING,
                        )
                    )
                    row.embedding_model = embedder.model_id
        vectors = embedder.embed([index_text(r.symptom, r.root_cause) for r in page])
        apply_to_index(
            db, index, IndexChanges(upsert=[*page], vectors=vectors_by_id(page, vectors))
        )
        done += len(page)
        if progress is not None:
            progress(done, total)
    return done
