"""Reads of lessons by id and by filter (SQL, the source of truth)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from memory.db import Database
from memory.errors import LessonNotFoundError
from memory.schema import LESSON_COLUMNS, LessonRow, lesson_from
from memory.types import ACTIVE, GLOBAL_SCOPE, Lesson, LessonFilter, Page

_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement
_TABLE: Any = LessonRow.__table__  # type: ignore[attr-defined]
# A lesson's columns as plain values (Core): no ORM rows, no dedup vector read.
_LESSON = select(*(_TABLE.c[name] for name in LESSON_COLUMNS))


def get(db: Database, lesson_id: str) -> Lesson:
    """One lesson by id; `LessonNotFoundError` if there is none."""
    with db.read() as session:
        row = session.execute(_LESSON.where(_TABLE.c.id == lesson_id)).first()
    if row is None:
        raise LessonNotFoundError(f"no lesson {lesson_id!r}")
    return lesson_from(row._mapping)


def get_many(db: Database, lesson_ids: Sequence[str]) -> list[Lesson]:
    """The lessons of `lesson_ids` that exist, in that order."""
    found: dict[str, Lesson] = {}
    for start in range(0, len(lesson_ids), _SQL_CHUNK):
        chunk = list(lesson_ids[start : start + _SQL_CHUNK])
        with db.read() as session:
            rows = session.execute(_LESSON.where(_TABLE.c.id.in_(chunk))).all()
            found.update((r.id, lesson_from(r._mapping)) for r in rows)
    return [found[i] for i in lesson_ids if i in found]


def list_lessons(db: Database, where: LessonFilter) -> Page[Lesson]:
    """A page of lessons matching the filter, with the total count."""
    conditions: list[Any] = []
    if where.scope is not None:
        scopes = {where.scope, GLOBAL_SCOPE} if where.include_global else {where.scope}
        conditions.append(col(LessonRow.scope).in_(sorted(scopes)))
    if where.error_type is not None:
        conditions.append(LessonRow.error_type == where.error_type)
    if where.status:
        conditions.append(col(LessonRow.status).in_(list(where.status)))
    sort_col = col(getattr(LessonRow, where.sort))
    ids = col(LessonRow.id)
    order = [sort_col.desc(), ids.desc()] if where.descending else [sort_col.asc(), ids.asc()]
    with db.read() as session:
        total = session.exec(select(func.count()).select_from(LessonRow).where(*conditions)).one()
        # Ids first, then the page's rows: a sort without an index then orders narrow
        # (key, id) pairs, not whole rows with their vectors.
        page = session.exec(
            select(LessonRow.id)
            .where(*conditions)
            .order_by(*order)
            .offset(where.offset)
            .limit(where.limit)
        ).all()
        rows = {r.id: r for r in session.execute(_LESSON.where(_TABLE.c.id.in_(page)))}
        items = tuple(lesson_from(rows[i]._mapping) for i in page if i in rows)
    return Page[Lesson](items=items, total=total, offset=where.offset, limit=where.limit)


def scopes(db: Database) -> list[str]:
    """Every scope that holds a lesson (any status), sorted."""
    return _distinct(db, col(LessonRow.scope))


def error_types(db: Database) -> list[str]:
    """Every error type a lesson has (any status), sorted."""
    return _distinct(db, col(LessonRow.error_type))


def _distinct(db: Database, column: Any) -> list[str]:
    with db.read() as session:
        return list(session.exec(select(column).distinct().order_by(column)).all())


def canonicals_of(
    db: Database, scopes: Sequence[str], error_types: Sequence[str]
) -> dict[str, list[str]]:
    """The recallable lessons of `scopes` that lessons of `error_types` were merged into, by
    scope: recall's error-type gate reads a canonical under its members' types too. (A
    merge joins lessons of one scope.)

    Two reads, each on its own index: the members on (scope, error_type, merged_into) alone,
    then their canonicals by id. As one query with a subquery, SQLite walked the whole scope
    for the outer rows (120 ms at 100k lessons)."""
    if not scopes or not error_types:
        return {}
    found: dict[str, list[str]] = {}
    with db.read() as session:
        merged_into = session.exec(
            select(LessonRow.merged_into)
            .where(
                col(LessonRow.scope).in_(list(scopes)),
                col(LessonRow.error_type).in_(list(error_types)),
                col(LessonRow.merged_into).is_not(None),
            )
            .distinct()
        ).all()
        ids = list(merged_into)
        for start in range(0, len(ids), _SQL_CHUNK):  # a bound parameter per id
            rows = session.execute(
                select(LessonRow.scope, LessonRow.id).where(
                    col(LessonRow.id).in_(ids[start : start + _SQL_CHUNK]),
                    col(LessonRow.scope).in_(list(scopes)),
                    col(LessonRow.status).in_(list(ACTIVE)),
                )
            )
            for scope, lesson_id in rows:
                found.setdefault(scope, []).append(lesson_id)
    return found
