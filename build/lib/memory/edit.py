"""Edits of stored lessons: field updates (re-embedded, re-indexed) and status changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory.db import Database
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder
from memory.errors import LessonNotFoundError, MemoryUsageError
from memory.index import LessonIndex, lesson_metadata
from memory.redact import redact
from memory.schema import INDEX_PENDING, LessonRow, to_lesson, utcnow
from memory.types import Lesson, LessonStatus
from memory.write import LessonWriter

TEXT_FIELDS = ("symptom", "root_cause", "fix", "applies_when")
EDITABLE = ("scope", "error_type", *TEXT_FIELDS)


def row_for_update(session: Any, lesson_id: str) -> LessonRow:
    """The row, locked for the rest of the transaction; `LessonNotFoundError` if missing."""
    row: LessonRow | None = session.get(LessonRow, lesson_id, with_for_update=True)
    if row is None:
        raise LessonNotFoundError(f"no lesson {lesson_id!r}")
    return row


def update_lesson(
    db: Database,
    index: LessonIndex,
    writer: LessonWriter,
    embedder: Embedder,
    current: Lesson,
    fields: Mapping[str, str],
) -> None:
    """Apply `fields` (redacted) to the lesson, then re-embed and re-index it."""
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise MemoryUsageError(f"not editable: {', '.join(sorted(unknown))}")
    changes = {k: redact(v) if k in TEXT_FIELDS else v for k, v in fields.items()}
    new = current.model_copy(update=changes)
    dedup_vec, index_vec = embedder.embed(
        [dedup_text(new.root_cause, new.fix), index_text(new.symptom, new.root_cause)]
    )
    with db.write(lock_scope=new.scope) as session:
        row = row_for_update(session, current.id)
        for key, value in changes.items():
            setattr(row, key, value)
        row.dedup_vector = pack(dedup_vec)
        row.embedding_model = embedder.model_id
        row.index_state = INDEX_PENDING
        row.updated_at = utcnow()
        session.add(row)
    if new.scope != current.scope:
        index.delete([current.id])  # it lives in the old scope's collection
    writer.index_rows([row], {row.id: index_vec})


def set_status(
    db: Database,
    index: LessonIndex,
    lesson_id: str,
    status: LessonStatus,
    merged_into: str | None,
) -> Lesson:
    """Change the status; keep merged_into / merged_from consistent on both lessons."""
    if (status == "merged") != (merged_into is not None):
        raise MemoryUsageError("merged_into is required for status 'merged' and only for it")
    if merged_into == lesson_id:
        raise MemoryUsageError("a lesson cannot be merged into itself")
    with db.write() as session:
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
    # After the commit: if this fails, check() reports the status drift and repairs it.
    index.update_metadata(
        [row.id], [lesson_metadata(row.scope, row.error_type, row.status, row.embedding_model)]
    )
    return to_lesson(row)
