"""Edits of stored lessons: field updates (re-embedded, re-indexed) and status changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from memory.commit import IndexChanges, Written, write_through
from memory.db import Database
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder
from memory.errors import LessonNotFoundError, MemoryUsageError
from memory.index import LessonIndex
from memory.redact import redact
from memory.schema import INDEX_PENDING, LessonRow, to_lesson
from memory.types import (
    ERROR_TYPE_MAX_CHARS,
    SCOPE_MAX_CHARS,
    STATUSES,
    Lesson,
    LessonStatus,
    utcnow,
)
from memory.vectors import forget_vectors

TEXT_FIELDS = ("symptom", "root_cause", "fix", "applies_when")
EDITABLE = ("scope", "error_type", *TEXT_FIELDS)
# What an edit may not leave blank (`applies_when` may be: "whenever the symptom shows").
REQUIRED = ("scope", "error_type", "symptom", "root_cause", "fix")
# What consolidation clusters on: the root-cause vector, the bucket (and the pair score's
# words of root cause and fix).
CLUSTERED = frozenset({"root_cause", "fix", "scope", "error_type"})


def row_for_update(session: Any, lesson_id: str) -> LessonRow:
    """The row, locked for the rest of the transaction; `LessonNotFoundError` if missing."""
    row: LessonRow | None = session.get(LessonRow, lesson_id, with_for_update=True)
    if row is None:
        raise LessonNotFoundError(f"no lesson {lesson_id!r}")
    return row


def update_lesson(
    db: Database,
    index: LessonIndex,
    embedder: Embedder,
    current: Lesson,
    fields: Mapping[str, str],
) -> None:
    """Apply `fields` (redacted) to the lesson, then re-embed and re-index it.

    Refused (`MemoryUsageError`, nothing written): an unknown or blank required field, a
    scope or error type over its bound (the store could not export it; PostgreSQL would
    refuse it), and a merged lesson (undoing the merge restores it as it was merged, which
    would drop the edit without a word)."""
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise MemoryUsageError(f"not editable: {', '.join(sorted(unknown))}")
    blank = [k for k in REQUIRED if k in fields and not fields[k].strip()]
    if blank:
        raise MemoryUsageError(f"{', '.join(blank)} cannot be empty")
    bounds = {"scope": SCOPE_MAX_CHARS, "error_type": ERROR_TYPE_MAX_CHARS}
    over = [
        f"{k} ({len(fields[k])} characters)"
        for k, n in bounds.items()
        if len(fields.get(k, "")) > n
    ]
    if over:
        limits = ", ".join(f"{k} {n}" for k, n in bounds.items())
        raise MemoryUsageError(f"too long: {', '.join(over)}; at most {limits} characters")
    changes = {k: redact(v) if k in TEXT_FIELDS else v for k, v in fields.items()}
    new = current.model_copy(update=changes)
    dedup_vec, index_vec = embedder.embed(
        [dedup_text(new.root_cause, new.fix), index_text(new.symptom, new.root_cause)]
    )

    def write(session: Session) -> Written[None]:
        row = row_for_update(session, current.id)
        if row.status == "merged":  # read under the row lock: a pass may just have merged it
            raise MemoryUsageError(
                f"lesson {current.id} is merged into {row.merged_into}: edit that lesson, "
                "or undo the merge first"
            )
        for key, value in changes.items():
            setattr(row, key, value)
        if CLUSTERED.intersection(changes):
            forget_vectors(session, [current.id])  # the next consolidation pass sees it anew
        row.dedup_vector = pack(dedup_vec)
        row.embedding_model = embedder.model_id
        row.index_state = INDEX_PENDING
        row.updated_at = utcnow()
        session.add(row)
        # A lesson that changed scope lives in the old scope's collection: delete it there.
        moved = [current.id] if new.scope != current.scope else []
        return Written(None, IndexChanges(upsert=[row], vectors={row.id: index_vec}, delete=moved))

    write_through(db, index, write, lock_scope=new.scope)


def set_status(
    db: Database,
    index: LessonIndex,
    lesson_id: str,
    status: LessonStatus,
    merged_into: str | None,
) -> Lesson:
    """Change the status; keep merged_into / merged_from consistent on both lessons."""
    if status not in STATUSES:
        raise MemoryUsageError(f"no status {status!r}: one of {', '.join(STATUSES)}")
    if (status == "merged") != (merged_into is not None):
        raise MemoryUsageError("merged_into is required for status 'merged' and only for it")
    if merged_into == lesson_id:
        raise MemoryUsageError("a lesson cannot be merged into itself")

    def write(session: Session) -> Written[Lesson]:
        row = row_for_update(session, lesson_id)
        previous_target = row.merged_into
        if previous_target is not None and previous_target != merged_into:
            target = session.get(LessonRow, previous_target, with_for_update=True)
            if target is not None:
                target.merged_from = [i for i in target.merged_from if i != lesson_id]
                session.add(target)
        if merged_into is not None:
            target = row_for_update(session, merged_into)
            if lesson_id not in target.merged_from:
                target.merged_from = [*target.merged_from, lesson_id]
            session.add(target)
        row.status = status
        row.merged_into = merged_into
        row.updated_at = utcnow()
        session.add(row)
        # Nothing for the index: it holds no status (`memory.index`).
        return Written(to_lesson(row))

    return write_through(db, index, write)
