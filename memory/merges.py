"""Merges: a consolidation merge written in one SQL transaction, and undone exactly.

The rows live in `memory.schema`: `lesson_merges` (members, canonical, whether the merge
created the canonical, before-snapshots of every lesson row it touched, the canonical's state
right after) and `consolidation_vectors` (see `memory.vectors`).

`apply_merges` is compare-and-set: it re-reads every lesson inside each merge's write
transaction and gives up on that merge (None) when one changed since the plan was made, so
two consolidators that race past the lease still cannot merge a lesson twice. The merges of
one call commit together, one transaction per scope (a crash leaves each such batch whole or
absent in SQL, never half a merge); the index is written after the commits
(`memory.commit`). Undo restores the before-snapshots exactly.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import bindparam, update
from sqlmodel import Session, col, select

from memory.commit import AfterCommitHook, IndexChanges, Written, write_through_each
from memory.db import Database
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder
from memory.errors import LessonNotFoundError, MemoryUsageError
from memory.index import LessonIndex
from memory.schema import (
    INDEX_PENDING,
    LessonRow,
    MergeRow,
    RootCauseVectorRow,
    aware,
    evidence_json,
    utcnow,
)
from memory.types import Evidence, Lesson, LessonStatus, LessonText

ACTIVE: tuple[LessonStatus, ...] = ("candidate", "validated")
_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement


class MergeNotFoundError(LessonNotFoundError):
    """No merge record with that id."""


class MergeConflictError(MemoryUsageError):
    """The lessons of a merge changed after it (undo later merges first, or it was undone)."""


class MergePlan(LessonText):
    """What a merge will write: the canonical's text and counters, decided by consolidation.

    `expected` holds each touched lesson's `updated_at` (compare-and-set). The store embeds
    the canonical text itself; a new canonical takes the root-cause vector of `leader_id`,
    since it stands for the leader's cluster in later passes.
    """

    scope: str
    error_type: str
    canonical_id: str | None  # fold into this existing canonical; None: create one
    leader_id: str
    member_ids: tuple[str, ...]  # lessons that become status "merged"
    expected: dict[str, datetime]
    status: LessonStatus
    seen: int
    recalled: int
    helped: int
    misled: int
    evidence: tuple[Evidence, ...]
    merged_from: tuple[str, ...]
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


def snapshot(row: LessonRow) -> dict[str, Any]:
    """Every column of a lesson row as JSON (bytes base64, datetimes ISO)."""
    data: dict[str, Any] = {}
    for name in LessonRow.model_fields:
        value = getattr(row, name)
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode()
        elif isinstance(value, datetime):
            value = aware(value).isoformat()
        elif isinstance(value, list):
            value = list(value)
        data[name] = value
    return data


def restore(row: LessonRow, data: dict[str, Any]) -> None:
    """Put a snapshot back into `row` (the inverse of `snapshot`).

    Not `index_state`: it says whether the index write finished, which happened (or not)
    after the snapshot; undo writes the index itself. Restoring it left lessons that were
    merged mid-write "pending" forever.
    """
    for name, value in data.items():
        if name == "index_state":
            continue
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
        created_at=aware(row.created_at),
        undone_at=aware(row.undone_at) if row.undone_at else None,
    )


def _unchanged(row: LessonRow | None, expected: datetime) -> bool:
    return (
        row is not None
        and row.status in ACTIVE
        and row.merged_into is None
        and aware(row.updated_at) == aware(expected)
    )


def apply_merges(
    db: Database,
    index: LessonIndex,
    embedder: Embedder,
    plans: Sequence[MergePlan],
    *,
    after_commit: AfterCommitHook | None = None,
) -> list[MergeRecord | None]:
    """Write the plans, one SQL transaction per scope, then the index; None where a lesson
    changed since its plan (that plan alone is skipped)."""
    if not plans:
        return []
    texts = [dedup_text(p.root_cause, p.fix) for p in plans]
    texts += [index_text(p.symptom, p.root_cause) for p in plans]
    vectors = embedder.embed(texts)
    by_scope: dict[str, list[int]] = {}
    for i, p in enumerate(plans):
        by_scope.setdefault(p.scope, []).append(i)
    batches = list(by_scope.values())
    writes = [
        (
            plans[group[0]].scope,
            _merge_writer(
                [plans[i] for i in group],
                [vectors[i] for i in group],
                [vectors[len(plans) + i] for i in group],
                embedder.model_id,
            ),
        )
        for group in batches
    ]
    results = write_through_each(db, index, writes, after_commit=after_commit)
    out: list[MergeRecord | None] = [None] * len(plans)
    for group, records in zip(batches, results, strict=True):
        for i, record in zip(group, records, strict=True):
            out[i] = record
    return out


def _rows_of(session: Session, ids: Sequence[str]) -> dict[str, LessonRow]:
    found: dict[str, LessonRow] = {}
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        query = select(LessonRow).where(col(LessonRow.id).in_(chunk)).with_for_update()
        found.update((r.id, r) for r in session.exec(query).all())
    return found


def _merge_writer(
    plans: Sequence[MergePlan],
    dedup_vecs: Sequence[list[float]],
    index_vecs: Sequence[list[float]],
    model: str,
) -> Callable[[Session], Written[list[MergeRecord | None]]]:
    """The SQL of several merges of one scope, in one transaction: one read of every lesson
    they touch, a compare-and-set per merge, bulk updates for the members."""

    def write(session: Session) -> Written[list[MergeRecord | None]]:
        rows = _rows_of(session, [i for p in plans for i in _touched(p)])
        now = utcnow()
        changes = IndexChanges()
        records: list[MergeRecord | None] = []
        done: list[tuple[MergePlan, str]] = []
        # No flush per statement: the canonicals and merge rows go out in one flush at the end.
        with session.no_autoflush:
            for plan, dedup_vec, index_vec in zip(plans, dedup_vecs, index_vecs, strict=True):
                record = _merge_one(session, plan, rows, now, pack(dedup_vec), model)
                records.append(record)
                if record is None:
                    continue
                canonical = rows[record.canonical_id]
                done.append((plan, canonical.id))
                changes.upsert.append(canonical)
                changes.vectors[canonical.id] = index_vec
                changes.metadata.extend(rows[i] for i in plan.member_ids)
        session.flush()
        _mark_merged(session, done, now)
        _mark_processed(session, done)
        return Written(records, changes)

    return write


def _merge_one(
    session: Session,
    plan: MergePlan,
    rows: dict[str, LessonRow],
    now: datetime,
    dedup_vector: bytes,
    model: str,
) -> MergeRecord | None:
    """One merge inside the batch's transaction; None (nothing written) if a lesson changed."""
    ids = _touched(plan)
    if not all(_unchanged(rows.get(i), plan.expected[i]) for i in ids):
        return None
    before = [snapshot(rows[i]) for i in ids]
    canonical = rows[plan.canonical_id] if plan.canonical_id else _new_canonical(plan, now)
    _write_canonical(canonical, plan, now, dedup_vector, model)
    session.add(canonical)
    rows[canonical.id] = canonical
    for member_id in plan.member_ids:
        member = rows[member_id]
        # Detached: one bulk UPDATE of the batch writes them; the index reads these values.
        session.expunge(member)
        member.status, member.merged_into, member.updated_at = "merged", canonical.id, now
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
    return to_record(merge)


def _touched(plan: MergePlan) -> list[str]:
    return [*([plan.canonical_id] if plan.canonical_id else []), *plan.member_ids]


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
        # Explicit values: sqlmodel's default_factory path costs ~1 ms per row.
        evidence=[],
        merged_from=[],
        embedding_model="",
        dedup_vector=b"",
        index_state=INDEX_PENDING,
    )


def _write_canonical(
    row: LessonRow, plan: MergePlan, now: datetime, dedup_vector: bytes, model: str
) -> None:
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
    row.dedup_vector = dedup_vector
    row.embedding_model = model
    row.index_state = INDEX_PENDING
    row.updated_at = now


def _mark_merged(session: Session, done: Sequence[tuple[MergePlan, str]], now: datetime) -> None:
    """The members of every merge of the batch, in one statement (Core, not the ORM: the
    member rows are detached, nothing in the session to bring in step)."""
    params = [{"b_id": m, "b_into": cid} for plan, cid in done for m in plan.member_ids]
    if params:
        session.connection().execute(
            update(LessonRow)
            .where(col(LessonRow.id) == bindparam("b_id"))
            .values(status="merged", merged_into=bindparam("b_into"), updated_at=now),
            params,
        )


def _mark_processed(session: Session, done: Sequence[tuple[MergePlan, str]]) -> None:
    """Every lesson of the merges is processed; a new canonical takes its leader's vector
    (it stands for the leader's cluster in later passes)."""
    ids = list(dict.fromkeys(i for plan, cid in done for i in (cid, *plan.member_ids)))
    for start in range(0, len(ids), _SQL_CHUNK):
        session.connection().execute(
            update(RootCauseVectorRow)
            .where(col(RootCauseVectorRow.lesson_id).in_(ids[start : start + _SQL_CHUNK]))
            .values(processed=True)
        )
    created = {plan.leader_id: cid for plan, cid in done if plan.canonical_id is None}
    leaders = list(created)
    for start in range(0, len(leaders), _SQL_CHUNK):
        chunk = leaders[start : start + _SQL_CHUNK]
        found = session.exec(
            select(
                RootCauseVectorRow.lesson_id,
                RootCauseVectorRow.embedding_model,
                RootCauseVectorRow.vector,
            ).where(col(RootCauseVectorRow.lesson_id).in_(chunk))
        ).all()
        for leader_id, model, vector in found:
            session.add(
                RootCauseVectorRow(
                    lesson_id=created[leader_id],
                    embedding_model=model,
                    vector=vector,
                    processed=True,
                )
            )


def undo_merge(
    db: Database,
    index: LessonIndex,
    embedder: Embedder,
    merge_id: str,
    *,
    after_commit: AfterCommitHook | None = None,
) -> MergeRecord:
    """Restore every lesson of a merge exactly as it was before it; the index follows.

    A canonical the merge created is deleted. Raises `MergeConflictError` if the merge was
    undone already or a later change touched its lessons (undo that later merge first).
    """

    def write(session: Session) -> Written[MergeRecord]:
        merge = session.get(MergeRow, merge_id, with_for_update=True)
        if merge is None:
            raise MergeNotFoundError(f"no merge {merge_id!r}")
        if merge.undone_at is not None:
            raise MergeConflictError(f"merge {merge_id} was already undone")
        canonical = session.get(LessonRow, merge.canonical_id, with_for_update=True)
        after = datetime.fromisoformat(merge.after_canonical["updated_at"])
        if canonical is None or aware(canonical.updated_at) != after:
            raise MergeConflictError(
                f"canonical {merge.canonical_id} changed after merge {merge_id} "
                "(a later merge or an edit): undo that first"
            )
        changes = IndexChanges()
        for data in merge.before:
            row = session.get(LessonRow, data["id"], with_for_update=True)
            if row is None:
                raise MergeConflictError(f"lesson {data['id']} of merge {merge_id} is gone")
            if data["id"] != merge.canonical_id and row.merged_into != merge.canonical_id:
                raise MergeConflictError(f"lesson {row.id} was moved after merge {merge_id}")
            restore(row, data)
            if row.id == merge.canonical_id:
                row.index_state = INDEX_PENDING  # its text changes back: re-embedded
                changes.upsert.append(row)
            else:
                changes.metadata.append(row)
            session.add(row)
        if merge.created_canonical:
            changes.delete.append(canonical.id)
            session.delete(canonical)
            vec = session.get(RootCauseVectorRow, canonical.id)
            if vec is not None:
                session.delete(vec)
        merge.undone_at = utcnow()
        session.add(merge)
        session.flush()
        return Written(to_record(merge), changes)

    (record,) = write_through_each(
        db, index, [(None, write)], embedder=embedder, after_commit=after_commit
    )
    return record


def list_merges(db: Database, *, limit: int = 100) -> list[MergeRecord]:
    """The newest merges first."""
    with db.read() as session:
        rows = session.exec(
            select(MergeRow).order_by(col(MergeRow.created_at).desc()).limit(limit)
        ).all()
        return [to_record(r) for r in rows]


def get_merge(db: Database, merge_id: str) -> MergeRecord:
    """One merge record; `MergeNotFoundError` if there is none."""
    with db.read() as session:
        return to_record(_merge_row(session, merge_id))


def merge_before(db: Database, merge_id: str) -> list[Lesson]:
    """The lessons as the merge found them (its before-snapshots), in the order it took them:
    an existing canonical first, then the members."""
    with db.read() as session:
        before = _merge_row(session, merge_id).before
    # A snapshot holds every column in JSON form (see `snapshot`), the lesson's fields among them.
    return [Lesson.model_validate({k: d[k] for k in Lesson.model_fields if k in d}) for d in before]


def merges_of(db: Database, lesson_id: str) -> list[MergeRecord]:
    """Merges whose canonical is this lesson or that folded it in (as the lesson is now
    linked: merged_into), newest first."""
    with db.read() as session:
        lesson = session.get(LessonRow, lesson_id)
        if lesson is None:
            raise LessonNotFoundError(f"no lesson {lesson_id!r}")
        canonicals = {lesson_id, *([lesson.merged_into] if lesson.merged_into else [])}
        rows = session.exec(
            select(MergeRow)
            .where(col(MergeRow.canonical_id).in_(list(canonicals)))
            .order_by(col(MergeRow.created_at).desc())
        ).all()
        return [
            to_record(r) for r in rows if r.canonical_id == lesson_id or lesson_id in r.member_ids
        ]


def _merge_row(session: Session, merge_id: str) -> MergeRow:
    row = session.get(MergeRow, merge_id)
    if row is None:
        raise MergeNotFoundError(f"no merge {merge_id!r}")
    return row
