"""Writing consolidation merges: a batch of `MergePlan`s, one SQL transaction per scope.

Each plan is compare-and-set (`memory.merges`): every lesson it touches is re-read inside
the transaction and the plan is skipped (None) when one changed since it was made; the
others of the batch are written. Members and processed flags go out as bulk statements, the
canonicals and merge records in one flush; the index is written after the commits
(`memory.commit`). Undo and the merge records' reads live in `memory.merges`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import bindparam, update
from sqlmodel import Session, col, select

from memory.commit import AfterCommitHook, IndexChanges, Written, write_through_each
from memory.db import Database
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder
from memory.index import LessonIndex
from memory.merges import MergePlan, MergeRecord, snapshot, to_record, unchanged
from memory.schema import (
    INDEX_PENDING,
    LessonRow,
    MergeRow,
    RootCauseVectorRow,
    evidence_json,
    utcnow,
)

_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement


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
    if not all(unchanged(rows.get(i), plan.expected[i]) for i in ids):
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
