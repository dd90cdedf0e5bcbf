"""Merge records: a consolidation merge written in one SQL transaction, and undone exactly.

Tables (created on first use by `ensure_tables`):
- `lesson_merges`: id, members, canonical, whether the canonical was created by the merge,
  before-snapshots of every lesson row it touched, the canonical's state right after.
- `consolidation_vectors`: per lesson the root-cause embedding a consolidator clusters on,
  and whether a pass has processed it (what makes passes incremental and resumable).

`apply_merge` is compare-and-set: it re-reads every lesson inside the write transaction and
gives up (returns None) when one changed since the plan was made, so two consolidators
that race past the lease still cannot merge a lesson twice. A crash leaves either the
whole merge or nothing in SQL; the vector index (derived) is brought up to date after the
commit, and `Memory.check(repair=True)` finishes it if the process died in between.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import JSON, Column, DateTime, LargeBinary
from sqlmodel import Field, Session, SQLModel, col, select

from memory.db import Database
from memory.errors import LessonNotFoundError, MemoryUsageError
from memory.schema import INDEX_PENDING, LessonRow, evidence_json, utcnow
from memory.types import Evidence, LessonStatus

ACTIVE = ("candidate", "validated")


class MergeNotFoundError(LessonNotFoundError):
    """No merge record with that id."""


class MergeConflictError(MemoryUsageError):
    """The lessons of a merge changed after it (undo later merges first, or it was undone)."""


class MergeRow(SQLModel, table=True):
    """One merge, with everything needed to undo it."""

    __tablename__ = "lesson_merges"

    id: str = Field(primary_key=True, max_length=64)
    scope: str = Field(max_length=200, index=True)
    error_type: str = Field(max_length=100)
    canonical_id: str = Field(max_length=64, index=True)
    created_canonical: bool
    member_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    before: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    after_canonical: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    written_by: str = Field(default="", max_length=40)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    undone_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class RootCauseVectorRow(SQLModel, table=True):
    """A lesson's root-cause embedding for clustering, and whether a pass processed it."""

    __tablename__ = "consolidation_vectors"

    lesson_id: str = Field(primary_key=True, max_length=64)
    embedding_model: str = Field(max_length=200)
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    processed: bool = Field(default=False, index=True)


MERGE_TABLES: list[Any] = [
    MergeRow.__table__,  # type: ignore[attr-defined]
    RootCauseVectorRow.__table__,  # type: ignore[attr-defined]
]


class MergePlan(BaseModel):
    """What a merge will write. `expected` holds each touched lesson's `updated_at` (CAS)."""

    model_config = ConfigDict(frozen=True)

    scope: str
    error_type: str
    canonical_id: str | None  # fold into this existing canonical; None: create one
    member_ids: tuple[str, ...]  # lessons that become status "merged"
    expected: dict[str, datetime]
    symptom: str
    root_cause: str
    fix: str
    applies_when: str
    status: LessonStatus
    seen: int
    recalled: int
    helped: int
    misled: int
    evidence: tuple[Evidence, ...]
    merged_from: tuple[str, ...]
    dedup_vector: bytes
    embedding_model: str
    # The cluster leader's root-cause vector: the canonical stands for the cluster later.
    root_vector: bytes
    written_by: str = ""


class MergeRecord(BaseModel):
    """A stored merge (without the snapshots)."""

    model_config = ConfigDict(frozen=True)

    id: str
    scope: str
    error_type: str
    canonical_id: str
    created_canonical: bool
    member_ids: tuple[str, ...]
    written_by: str
    created_at: datetime
    undone_at: datetime | None = None


def ensure_tables(db: Database) -> None:
    """Create the merge tables if missing (idempotent)."""
    with db.write("__schema__") as session:
        conn = session.connection()
        for table in MERGE_TABLES:
            table.create(conn, checkfirst=True)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def snapshot(row: LessonRow) -> dict[str, Any]:
    """Every column of a lesson row as JSON (bytes base64, datetimes ISO)."""
    data: dict[str, Any] = {}
    for name in LessonRow.model_fields:
        value = getattr(row, name)
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode()
        elif isinstance(value, datetime):
            value = _aware(value).isoformat()
        elif isinstance(value, list):
            value = list(value)
        data[name] = value
    return data


def restore(row: LessonRow, data: dict[str, Any]) -> None:
    """Put a snapshot back into `row` (the inverse of `snapshot`)."""
    for name, value in data.items():
        if name == "dedup_vector":
            value = base64.b64decode(value)
        elif name in ("created_at", "updated_at"):
            value = datetime.fromisoformat(value)
        setattr(row, name, value)


def to_record(row: MergeRow) -> MergeRecord:
    """Frozen view of a merge row."""
    return MergeRecord(
        id=row.id,
        scope=row.scope,
        error_type=row.error_type,
        canonical_id=row.canonical_id,
        created_canonical=row.created_canonical,
        member_ids=tuple(row.member_ids),
        written_by=row.written_by,
        created_at=_aware(row.created_at),
        undone_at=_aware(row.undone_at) if row.undone_at else None,
    )


def _unchanged(row: LessonRow | None, expected: datetime) -> bool:
    return (
        row is not None
        and row.status in ACTIVE
        and row.merged_into is None
        and _aware(row.updated_at) == _aware(expected)
    )


def apply_merge(db: Database, plan: MergePlan) -> tuple[MergeRecord, LessonRow] | None:
    """Write `plan` in one transaction; None when a lesson changed since it was planned."""
    touched = [*([plan.canonical_id] if plan.canonical_id else []), *plan.member_ids]
    with db.write(lock_scope=plan.scope) as session:
        rows = {
            r.id: r
            for r in session.exec(
                select(LessonRow).where(col(LessonRow.id).in_(touched)).with_for_update()
            ).all()
        }
        if not all(_unchanged(rows.get(i), plan.expected[i]) for i in touched):
            return None
        before = [snapshot(rows[i]) for i in touched]
        now = utcnow()
        canonical = rows[plan.canonical_id] if plan.canonical_id else _new_canonical(plan, now)
        _write_canonical(canonical, plan, now)
        session.add(canonical)
        for member_id in plan.member_ids:
            member = rows[member_id]
            member.status, member.merged_into, member.updated_at = "merged", canonical.id, now
            session.add(member)
        _mark_processed(session, [canonical.id, *plan.member_ids], plan)
        merge = MergeRow(
            id="mrg_" + secrets.token_hex(6),
            scope=plan.scope,
            error_type=plan.error_type,
            canonical_id=canonical.id,
            created_canonical=plan.canonical_id is None,
            member_ids=list(plan.member_ids),
            before=before,
            after_canonical={"updated_at": now.isoformat()},
            written_by=plan.written_by,
            created_at=now,
        )
        session.add(merge)
        session.flush()
        return to_record(merge), canonical


def _new_canonical(plan: MergePlan, now: datetime) -> LessonRow:
    return LessonRow(
        id="les_" + secrets.token_hex(8),
        scope=plan.scope,
        error_type=plan.error_type,
        symptom="",
        root_cause="",
        fix="",
        created_at=now,
        updated_at=now,
    )


def _write_canonical(row: LessonRow, plan: MergePlan, now: datetime) -> None:
    row.symptom, row.root_cause, row.fix = plan.symptom, plan.root_cause, plan.fix
    row.applies_when, row.status = plan.applies_when, plan.status
    row.seen, row.recalled, row.helped, row.misled = (
        plan.seen,
        plan.recalled,
        plan.helped,
        plan.misled,
    )
    row.evidence = evidence_json(plan.evidence)
    row.merged_from = list(plan.merged_from)
    row.merged_into = None
    row.dedup_vector = plan.dedup_vector
    row.embedding_model = plan.embedding_model
    row.index_state = INDEX_PENDING
    row.updated_at = now


def _mark_processed(session: Session, ids: Sequence[str], plan: MergePlan) -> None:
    for lesson_id in ids:
        vec = session.get(RootCauseVectorRow, lesson_id)
        if vec is None:
            # A new canonical: it stands for its cluster, so it gets the leader's vector.
            vec = RootCauseVectorRow(
                lesson_id=lesson_id, embedding_model=plan.embedding_model, vector=plan.root_vector
            )
        vec.processed = True
        session.add(vec)


def undo_merge(db: Database, merge_id: str) -> tuple[MergeRecord, list[LessonRow], str | None]:
    """Restore every lesson of a merge exactly as it was before it.

    Returns the record, the restored rows, and the id of a canonical the merge had created
    (now deleted) or None. Raises `MergeConflictError` if the merge was undone already or a
    later change touched its lessons (undo that later merge first).
    """
    with db.write() as session:
        merge = session.get(MergeRow, merge_id, with_for_update=True)
        if merge is None:
            raise MergeNotFoundError(f"no merge {merge_id!r}")
        if merge.undone_at is not None:
            raise MergeConflictError(f"merge {merge_id} was already undone")
        canonical = session.get(LessonRow, merge.canonical_id, with_for_update=True)
        after = datetime.fromisoformat(merge.after_canonical["updated_at"])
        if canonical is None or _aware(canonical.updated_at) != after:
            raise MergeConflictError(
                f"canonical {merge.canonical_id} changed after merge {merge_id} "
                "(a later merge or an edit): undo that first"
            )
        restored: list[LessonRow] = []
        for data in merge.before:
            row = session.get(LessonRow, data["id"], with_for_update=True)
            if row is None:
                raise MergeConflictError(f"lesson {data['id']} of merge {merge_id} is gone")
            if data["id"] != merge.canonical_id and row.merged_into != merge.canonical_id:
                raise MergeConflictError(f"lesson {row.id} was moved after merge {merge_id}")
            restore(row, data)
            session.add(row)
            restored.append(row)
        deleted = None
        if merge.created_canonical:
            deleted = canonical.id
            session.delete(canonical)
            vec = session.get(RootCauseVectorRow, canonical.id)
            if vec is not None:
                session.delete(vec)
        merge.undone_at = utcnow()
        session.add(merge)
        session.flush()
        return to_record(merge), restored, deleted


def list_merges(db: Database, *, limit: int = 100) -> list[MergeRecord]:
    """The newest merges first."""
    with db.read() as session:
        rows = session.exec(
            select(MergeRow).order_by(col(MergeRow.created_at).desc()).limit(limit)
        ).all()
        return [to_record(r) for r in rows]
