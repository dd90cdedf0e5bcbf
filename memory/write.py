"""The write path: redact -> embed -> (locked) recall-loop guard + dedup -> SQL -> index.

SQL is the source of truth and is written first with `index_state="pending"`; the index is
written after the commit and the row marked "indexed" (`memory.commit.write_through`, one
transaction per scope). Embedding happens before the lock is taken, so the serialised
section is only a few SQL statements.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session, col, select

from memory.blas import one_blas_thread
from memory.commit import AfterCommitHook, IndexChanges, IndexEntry, Written, write_through_each
from memory.db import Database
from memory.dedup import Match, Vector, cosine, dedup_text, index_text, pack, unpack
from memory.embeddings import Embedder
from memory.index import LessonIndex
from memory.pools import DedupPools, Mark, VectorSet
from memory.redact import redact_draft
from memory.schema import (
    INDEX_PENDING,
    LessonRow,
    ReviewRow,
    RunRow,
    evidence_json,
    lesson_from,
    to_lesson,
)
from memory.types import AddResult, Evidence, Lesson, LessonDraft, utcnow

# A lesson seen many times keeps its newest evidence only; `seen` still counts every sighting.
MAX_EVIDENCE = 50

__all__ = ["AfterCommitHook", "LessonWriter", "WriteConfig", "new_lesson_id"]


def new_lesson_id() -> str:
    """A short random id (64 bits: collisions are negligible at millions of lessons)."""
    return "les_" + secrets.token_hex(8)


@dataclass(frozen=True)
class WriteConfig:
    """Similarity thresholds of the write path (cosine on root cause + fix embeddings)."""

    dedup_similarity: float
    loop_similarity: float


@dataclass
class _Prepared:
    draft: LessonDraft
    dedup_vec: Vector
    index_vec: list[float]


# A new lesson's column values: inserted in bulk, no ORM row (one costs ~0.2 ms to build).
_Values = dict[str, Any]


@dataclass
class _Batch:
    results: list[AddResult | None]
    created: list[IndexEntry] = field(default_factory=list)
    index_vecs: dict[str, list[float]] = field(default_factory=dict)
    inserts: dict[str, _Values] = field(default_factory=dict)  # new rows not yet inserted
    dedup_vecs: dict[str, Vector] = field(default_factory=dict)  # of the new rows
    run_id: str | None = None  # the run whose lessons these are


def _better(a: Match | None, b: Match | None) -> Match | None:
    """The closer of two matches; the stored lesson on a tie (it came first)."""
    if a is None or (b is not None and b.similarity > a.similarity):
        return b
    return a


def _with_run_evidence(draft: LessonDraft, run_id: str | None) -> LessonDraft:
    if run_id is None or any(e.run_id == run_id for e in draft.evidence):
        return draft
    return draft.model_copy(update={"evidence": (*draft.evidence, Evidence(run_id=run_id))})


# How the review flag of a deprecated lesson learned again begins (`_flag_relearned`).
RELEARNED = "deprecated, but learned again"


def _flag_relearned(session: Session, row: LessonRow, run_id: str | None) -> None:
    """A run learned a deprecated lesson again: it stays deprecated (a person retired it),
    and the review queue says so, so that advice relearned after all is not lost unseen.

    The relearned part of the flag names the newest run and the count, rewritten on every
    sighting; a flag raised for another reason (e.g. by the lift policy) keeps that reason
    first."""
    by = f" by run {run_id}" if run_id else ""
    note = (
        f"{RELEARNED}{by} (seen {row.seen} times): "
        f"restore it (`lessonloop lessons restore {row.id}`) if its advice is right"
    )
    flag = session.get(ReviewRow, row.id, with_for_update=True)
    if flag is None:
        session.add(ReviewRow(lesson_id=row.id, reason=note, flagged_at=utcnow()))
        return
    other = flag.reason.split(RELEARNED, 1)[0].rstrip("; ")
    flag.reason = f"{other}; {note}" if other else note
    session.add(flag)


def _merge_evidence(old: list[dict[str, str]], new: Sequence[Evidence]) -> list[dict[str, str]]:
    merged = list(old)
    known = {(e.get("run_id", ""), e.get("excerpt", "")) for e in old}
    for e in new:
        if (e.run_id, e.excerpt) not in known:
            known.add((e.run_id, e.excerpt))
            merged.append(e.model_dump())
    return merged[-MAX_EVIDENCE:]


def _insert(session: Session, batch: _Batch) -> None:
    """Insert the batch's new rows in one executemany (Core: no ORM rows to flush)."""
    if batch.inserts:
        session.execute(insert(LessonRow), list(batch.inserts.values()))
        batch.inserts.clear()


class LessonWriter:
    """Adds drafts to the store; one instance per `Memory`."""

    def __init__(
        self,
        db: Database,
        index: LessonIndex,
        embedder: Embedder,
        config: WriteConfig,
        after_sql_commit: AfterCommitHook | None = None,
    ) -> None:
        self.db = db
        self.index = index
        self.embedder = embedder
        self.config = config
        # Fault-injection point for tests: runs after the SQL commit, before the index write.
        self.after_sql_commit = after_sql_commit
        self.pools = DedupPools(embedder.model_id, embedder.dim)

    def add_many(
        self, drafts: Sequence[LessonDraft], *, run_id: str | None = None
    ) -> list[AddResult]:
        """Add drafts in order; results line up with `drafts`."""
        if not drafts:
            return []
        clean = [_with_run_evidence(redact_draft(d), run_id) for d in drafts]
        dedup_vecs = self.embedder.embed([dedup_text(d.root_cause, d.fix) for d in clean])
        index_vecs = self.embedder.embed([index_text(d.symptom, d.root_cause) for d in clean])
        prepared = [
            _Prepared(d, unpack(pack(dv)), iv)
            for d, dv, iv in zip(clean, dedup_vecs, index_vecs, strict=True)
        ]
        batch = _Batch(results=[None] * len(prepared), run_id=run_id)
        by_scope: dict[str, list[int]] = {}
        for i, p in enumerate(prepared):
            by_scope.setdefault(p.draft.scope, []).append(i)

        def writer(scope: str, positions: list[int]) -> Callable[[Session], Written[None]]:
            def write(session: Session) -> Written[None]:
                first = len(batch.created)
                items = [(i, prepared[i]) for i in positions]
                on_commit = self._write_scope(session, scope, items, batch)
                if run_id is not None:
                    self._note_written(session, run_id, batch, positions)
                created = batch.created[first:]
                vectors = {r.id: batch.index_vecs[r.id] for r in created}
                changes = IndexChanges(upsert=list(created), vectors=vectors)
                return Written(None, changes, on_commit=on_commit)

            return write

        write_through_each(
            self.db,
            self.index,
            [(scope, writer(scope, positions)) for scope, positions in by_scope.items()],
            after_commit=self.after_sql_commit,
        )
        return [r for r in batch.results if r is not None]

    def _write_scope(
        self, session: Session, scope: str, items: list[tuple[int, _Prepared]], batch: _Batch
    ) -> Callable[[], None]:
        """Dedup and insert one scope's drafts; returns what updates the dedup pools once
        the transaction has committed (the new rows, without reading them back)."""
        # The dedup scans are matrix products; OpenBLAS's threads only wait on a busy machine.
        with one_blas_thread():
            marks = self._dedup_scope(session, scope, items, batch)
        rows: dict[str, list[tuple[str, Vector | None]]] = {}
        latest = utcnow()  # no later than any timestamp the next look at SQL can see
        for lesson_id, values in batch.inserts.items():
            vec = None if values["status"] == "merged" else batch.dedup_vecs[lesson_id]
            rows.setdefault(values["error_type"], []).append((lesson_id, vec))
            latest = min(latest, values["updated_at"])
        _insert(session, batch)
        batch.dedup_vecs.clear()
        return self.pools.wrote(session, scope, marks, rows, latest)

    def _dedup_scope(
        self, session: Session, scope: str, items: list[tuple[int, _Prepared]], batch: _Batch
    ) -> dict[str, Mark | None]:
        """Decide each draft (new, duplicate, recall loop); returns the counters the dedup
        pools were synced at."""
        by_type: dict[str, list[tuple[int, _Prepared]]] = {}
        for pos, p in items:
            by_type.setdefault(p.draft.error_type, []).append((pos, p))
        # Each draft's best match among the stored lessons: one matrix product per error
        # type against the cached pool (memory.pools), synced inside this transaction.
        stored: dict[int, Match | None] = {}
        pools, marks = self.pools.pools(session, scope, list(by_type))
        for error_type, typed in by_type.items():
            pool = pools[error_type]
            stored.update(
                zip(
                    [pos for pos, _ in typed],
                    pool.best([p.dedup_vec for _, p in typed]),
                    strict=True,
                )
            )
        # Lessons this batch creates: a later draft of the batch may repeat them.
        created = {t: VectorSet(self.embedder.dim) for t in by_type}
        injected = self._injected_vectors(session, [p for _, p in items])
        for pos, p in items:
            mine = created[p.draft.error_type]
            match = _better(stored[pos], mine.best_one(p.dedup_vec))
            batch.results[pos] = self._write_one(session, p, match, mine, injected, batch)
        return marks

    def _injected_vectors(self, session: Session, items: list[_Prepared]) -> dict[str, Vector]:
        ids = sorted({i for p in items for i in p.draft.injected_lesson_ids})
        if not ids:
            return {}
        rows = session.exec(
            select(LessonRow.id, LessonRow.dedup_vector).where(col(LessonRow.id).in_(ids))
        ).all()
        return {lesson_id: unpack(blob) for lesson_id, blob in rows}

    def _write_one(
        self,
        session: Session,
        p: _Prepared,
        match: Match | None,
        created: VectorSet,
        injected: dict[str, Vector],
        batch: _Batch,
    ) -> AddResult:
        for lesson_id in p.draft.injected_lesson_ids:
            vec = injected.get(lesson_id)
            if vec is None or vec.shape != p.dedup_vec.shape:
                continue
            sim = cosine(vec, p.dedup_vec)
            if sim >= self.config.loop_similarity:
                return AddResult(
                    lesson=None,
                    action="rejected_recall_loop",
                    reason=f"restates injected lesson {lesson_id} (similarity {sim:.3f})",
                )
        if match is not None and match.similarity >= self.config.dedup_similarity:
            reason = (
                f"same root cause and fix as {match.lesson_id} (similarity {match.similarity:.3f})"
            )
            lesson = self._seen_again(session, match.lesson_id, p.draft, batch)
            if lesson.status == "deprecated":
                reason += "; it is deprecated: flagged for review (relearned)"
            return AddResult(lesson=lesson, action="merged_duplicate", reason=reason)
        now = utcnow()
        d = p.draft
        values: _Values = {
            "id": new_lesson_id(),
            "scope": d.scope,
            "error_type": d.error_type,
            "symptom": d.symptom,
            "root_cause": d.root_cause,
            "fix": d.fix,
            "applies_when": d.applies_when,
            "evidence": evidence_json(d.evidence)[-MAX_EVIDENCE:],
            "status": d.status,
            "created_at": now,
            "updated_at": now,
            "embedding_model": self.embedder.model_id,
            "dedup_vector": pack(p.dedup_vec),  # float32 already: no list in between
            "index_state": INDEX_PENDING,
            "merged_from": [],
            "merged_into": None,
            "seen": 1,
            "recalled": 0,
            "helped": 0,
            "misled": 0,
        }
        lesson_id = values["id"]
        # Inserted with the scope's other new rows in one statement (`_insert`): the ORM's
        # unit of work costs more than the insert itself in a bulk load.
        batch.inserts[lesson_id] = values
        batch.dedup_vecs[lesson_id] = p.dedup_vec
        created.put(lesson_id, p.dedup_vec)
        batch.created.append(
            IndexEntry(
                id=lesson_id,
                scope=d.scope,
                error_type=d.error_type,
                embedding_model=self.embedder.model_id,
                symptom=d.symptom,
                root_cause=d.root_cause,
            )
        )
        batch.index_vecs[lesson_id] = p.index_vec
        return AddResult(lesson=lesson_from(values), action="created", reason="new lesson")

    @staticmethod
    def _seen_again(session: Session, lesson_id: str, draft: LessonDraft, batch: _Batch) -> Lesson:
        """One more sighting of a lesson: stored, or created earlier in this batch. A
        validated draft (a person's, e.g. a seed line marked so) validates a candidate it
        meets; nothing else changes a status here."""
        values = batch.inserts.get(lesson_id)
        if values is not None:
            values["seen"] += 1
            values["evidence"] = _merge_evidence(values["evidence"], draft.evidence)
            values["updated_at"] = utcnow()
            if draft.status == "validated" and values["status"] == "candidate":
                values["status"] = "validated"
            return lesson_from(values)
        row = session.exec(
            select(LessonRow).where(LessonRow.id == lesson_id).with_for_update()
        ).one()
        row.seen += 1
        row.evidence = _merge_evidence(row.evidence or [], draft.evidence)
        row.updated_at = utcnow()
        if draft.status == "validated" and row.status == "candidate":
            row.status = "validated"
        session.add(row)
        if row.status == "deprecated":
            _flag_relearned(session, row, batch.run_id)
        return to_lesson(row)

    @staticmethod
    def _note_written(session: Session, run_id: str, batch: _Batch, positions: list[int]) -> None:
        run = session.exec(select(RunRow).where(RunRow.id == run_id).with_for_update()).first()
        if run is None:
            return
        ids = list(run.written_lesson_ids or [])
        for pos in positions:
            result = batch.results[pos]
            if result is not None and result.lesson is not None and result.lesson.id not in ids:
                ids.append(result.lesson.id)
        run.written_lesson_ids = ids
        session.add(run)
