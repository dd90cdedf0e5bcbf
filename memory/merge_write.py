"""Writing consolidation merges: a batch of `MergePlan`s, one SQL transaction per scope.

Each plan is compare-and-set (`memory.merges`): every lesson it touches is re-read inside
the transaction and the plan is skipped (None) when one changed since it was made; the
others of the batch are written. Everything goes out as bulk statements in SQLAlchemy Core
(one read of the touched rows, one insert or update per kind of row): at 100k lessons a
merge pass touches every lesson, and ORM rows (load, identity map, flush) cost more than
the statements themselves. The index is written after the commits (`memory.commit`): the
canonicals only, since members change status alone and the index holds none
(`memory.index`). Undo and the merge records' reads live in
`memory.merges`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, update
from sqlmodel import Session, col, select

from memory.commit import AfterCommitHook, IndexChanges, IndexEntry, Written, write_through_each
from memory.db import Database
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder
from memory.index import LessonIndex
from memory.merges import (
    MEMBER_UNCHANGED,
    USE_COUNTERS,
    MergePlan,
    MergeRecord,
    snapshot,
    unchanged,
)
from memory.schema import (
    INDEX_PENDING,
    LessonRow,
    MergeRow,
    RootCauseVectorRow,
    evidence_json,
)
from memory.types import utcnow

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


_LESSONS: Any = LessonRow.__table__  # type: ignore[attr-defined]
_Values = dict[str, Any]  # a lesson row's column values


def _rows_of(session: Session, ids: Sequence[str]) -> dict[str, _Values]:
    """The column values of these lessons, locked for the transaction (PostgreSQL)."""
    found: dict[str, _Values] = {}
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        query = select(_LESSONS).where(_LESSONS.c.id.in_(chunk)).with_for_update()
        found.update((r.id, dict(r._mapping)) for r in session.execute(query))
    return found


def _entry(values: Mapping[str, Any]) -> IndexEntry:
    return IndexEntry(
        id=values["id"],
        scope=values["scope"],
        error_type=values["error_type"],
        embedding_model=values["embedding_model"],
        symptom=values["symptom"],
        root_cause=values["root_cause"],
    )


class _Out:
    """The statements a batch of merges writes, gathered while the plans are checked."""

    def __init__(self) -> None:
        self.new: list[_Values] = []  # canonicals to insert
        self.folded: list[_Values] = []  # existing canonicals to update
        self.merges: list[_Values] = []
        self.done: list[tuple[MergePlan, str]] = []


def _merge_writer(
    plans: Sequence[MergePlan],
    dedup_vecs: Sequence[list[float]],
    index_vecs: Sequence[list[float]],
    model: str,
) -> Callable[[Session], Written[list[MergeRecord | None]]]:
    """The SQL of several merges of one scope, in one transaction: one read of every lesson
    they touch, a compare-and-set per merge, bulk statements for the rows."""

    def write(session: Session) -> Written[list[MergeRecord | None]]:
        rows = _rows_of(session, [i for p in plans for i in _touched(p)])
        now = utcnow()
        changes = IndexChanges()
        records: list[MergeRecord | None] = []
        out = _Out()
        for plan, dedup_vec, index_vec in zip(plans, dedup_vecs, index_vecs, strict=True):
            record = _merge_one(plan, rows, now, pack(dedup_vec), model, out)
            records.append(record)
            if record is None:
                continue
            canonical = rows[record.canonical_id]
            changes.upsert.append(_entry(canonical))
            changes.vectors[record.canonical_id] = index_vec
            # Members keep their index entries as they are: the index holds no status.
        _write_rows(session, out, now)
        _mark_processed(session, out.done)
        return Written(records, changes)

    return write


def _merge_one(
    plan: MergePlan,
    rows: dict[str, _Values],
    now: datetime,
    dedup_vector: bytes,
    model: str,
    out: _Out,
) -> MergeRecord | None:
    """One merge of the batch, gathered into `out`; None (nothing written) if a lesson
    changed. `rows` is brought up to date with what the batch writes."""
    ids = _touched(plan)
    if not all(unchanged(rows.get(i), plan.expected[i]) for i in ids):
        return None
    before = [
        snapshot(rows[i], leave_out=MEMBER_UNCHANGED if i in plan.member_ids else frozenset())
        for i in ids
    ]
    if plan.canonical_id:
        canonical = rows[plan.canonical_id]
        out.folded.append(canonical)
    else:
        canonical = _new_canonical(plan, now)
        rows[canonical["id"]] = canonical
        out.new.append(canonical)
    _write_canonical(canonical, plan, now, dedup_vector, model)
    for member_id in plan.member_ids:
        rows[member_id].update(status="merged", merged_into=canonical["id"], updated_at=now)
    merge: _Values = {
        "id": "mrg_" + secrets.token_hex(6),
        "scope": plan.scope,
        "error_type": plan.error_type,
        "canonical_id": canonical["id"],
        "created_canonical": plan.canonical_id is None,
        "member_ids": list(plan.member_ids),
        "before": before,
        # What undo checks: a canonical recalled or counted since cannot go back silently.
        "after_canonical": {
            "updated_at": now.isoformat(),
            **{name: canonical[name] for name in USE_COUNTERS},
        },
        "written_by": plan.written_by,
        "created_at": now,
        "undone_at": None,
    }
    out.merges.append(merge)
    out.done.append((plan, canonical["id"]))
    return MergeRecord(
        id=merge["id"],
        scope=plan.scope,
        error_type=plan.error_type,
        canonical_id=canonical["id"],
        created_canonical=merge["created_canonical"],
        member_ids=plan.member_ids,
        written_by=plan.written_by,
        created_at=now,
    )


def _touched(plan: MergePlan) -> list[str]:
    return [*([plan.canonical_id] if plan.canonical_id else []), *plan.member_ids]


def _new_canonical(plan: MergePlan, now: datetime) -> _Values:
    return {
        "id": "les_" + secrets.token_hex(8),
        "scope": plan.scope,
        "error_type": plan.error_type,
        "created_at": now,
        "evidence": [],
        "merged_from": [],
        "merged_into": None,
        "embedding_model": "",
        "dedup_vector": b"",
        "index_state": INDEX_PENDING,
    }


# What a merge writes into its canonical (the rest of a folded canonical stays as it was).
_CANONICAL_COLUMNS = (
    *("symptom", "root_cause", "fix", "applies_when", "status", "seen", "recalled"),
    *("helped", "misled", "evidence", "merged_from", "merged_into", "dedup_vector"),
    *("embedding_model", "index_state", "updated_at"),
)


def _write_canonical(
    row: _Values, plan: MergePlan, now: datetime, dedup_vector: bytes, model: str
) -> None:
    row.update(
        symptom=plan.symptom,
        root_cause=plan.root_cause,
        fix=plan.fix,
        applies_when=plan.applies_when,
        status=plan.status,
        seen=plan.seen,
        recalled=plan.recalled,
        helped=plan.helped,
        misled=plan.misled,
        evidence=evidence_json(plan.evidence),
        merged_from=list(plan.merged_from),
        merged_into=None,
        dedup_vector=dedup_vector,
        embedding_model=model,
        index_state=INDEX_PENDING,
        updated_at=now,
    )


def _write_rows(session: Session, out: _Out, now: datetime) -> None:
    """The batch's statements: new canonicals, folded canonicals, members, merge records."""
    conn = session.connection()
    if out.new:
        conn.execute(insert(_LESSONS), out.new)
    if out.folded:
        conn.execute(
            update(_LESSONS)
            .where(_LESSONS.c.id == bindparam("b_id"))
            .values({c: bindparam(f"b_{c}") for c in _CANONICAL_COLUMNS}),
            [{"b_id": r["id"], **{f"b_{c}": r[c] for c in _CANONICAL_COLUMNS}} for r in out.folded],
        )
    # The members of every merge of the batch, in one statement.
    params = [{"b_id": m, "b_into": cid} for plan, cid in out.done for m in plan.member_ids]
    if params:
        conn.execute(
            update(_LESSONS)
            .where(_LESSONS.c.id == bindparam("b_id"))
            .values(status="merged", merged_into=bindparam("b_into"), updated_at=now),
            params,
        )
    if out.merges:
        conn.execute(insert(MergeRow.__table__), out.merges)  # type: ignore[attr-defined]


def _mark_processed(session: Session, done: Sequence[tuple[MergePlan, str]]) -> None:
    """Every lesson of the merges is processed; a new canonical takes its leader's vector
    (it stands for the leader's cluster in later passes)."""
    conn = session.connection()
    ids = list(dict.fromkeys(i for plan, cid in done for i in (cid, *plan.member_ids)))
    for start in range(0, len(ids), _SQL_CHUNK):
        conn.execute(
            update(RootCauseVectorRow)
            .where(col(RootCauseVectorRow.lesson_id).in_(ids[start : start + _SQL_CHUNK]))
            .values(processed=True)
        )
    created = {plan.leader_id: cid for plan, cid in done if plan.canonical_id is None}
    leaders = list(created)
    for start in range(0, len(leaders), _SQL_CHUNK):
        chunk = leaders[start : start + _SQL_CHUNK]
        found = conn.execute(
            select(
                RootCauseVectorRow.lesson_id,
                RootCauseVectorRow.embedding_model,
                RootCauseVectorRow.vector,
            ).where(col(RootCauseVectorRow.lesson_id).in_(chunk))
        ).all()
        values = [
            {"lesson_id": created[leader], "embedding_model": m, "vector": v, "processed": True}
            for leader, m, v in found
        ]
        if values:
            conn.execute(insert(RootCauseVectorRow.__table__), values)  # type: ignore[attr-defined]
