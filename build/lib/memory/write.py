"""The write path: redact -> embed -> (locked) recall-loop guard + dedup -> SQL -> index.

SQL is the source of truth and is written first with `index_state="pending"`; the index is
written after the commit and the row marked "indexed". A crash in between leaves a pending
row that `Memory.check(repair=True)` finishes. Embedding happens before the lock is taken,
so the serialised section is only a few SQL statements.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import update
from sqlmodel import Session, col, select

from memory.db import Database
from memory.dedup import Vector, best_match, cosine, dedup_text, index_text, pack, unpack
from memory.embeddings import Embedder
from memory.index import LessonIndex, lesson_metadata
from memory.redact import redact_draft
from memory.schema import (
    INDEX_DONE,
    INDEX_PENDING,
    LessonRow,
    RunRow,
    evidence_json,
    to_lesson,
    utcnow,
)
from memory.types import AddResult, Evidence, LessonDraft

# A lesson seen many times keeps its newest evidence only; `seen` still counts every sighting.
MAX_EVIDENCE = 50

AfterCommitHook = Callable[[Sequence[str]], None]


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


@dataclass
class _Batch:
    results: list[AddResult | None]
    created: list[LessonRow] = field(default_factory=list)
    index_vecs: dict[str, list[float]] = field(default_factory=dict)


def _with_run_evidence(draft: LessonDraft, run_id: str | None) -> LessonDraft:
    if run_id is None or any(e.run_id == run_id for e in draft.evidence):
        return draft
    return draft.model_copy(update={"evidence": (*draft.evidence, Evidence(run_id=run_id))})


def _merge_evidence(old: list[dict[str, str]], new: Sequence[Evidence]) -> list[dict[str, str]]:
    merged = list(old)
    known = {(e.get("run_id", ""), e.get("excerpt", "")) for e in old}
    for e in new:
        if (e.run_id, e.excerpt) not in known:
            known.add((e.run_id, e.excerpt))
            merged.append(e.model_dump())
    return merged[-MAX_EVIDENCE:]


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
        batch = _Batch(results=[None] * len(prepared))
        by_scope: dict[str, list[int]] = {}
        for i, p in enumerate(prepared):
            by_scope.setdefault(p.draft.scope, []).append(i)
        for scope, positions in by_scope.items():
            with self.db.write(lock_scope=scope) as session:
                self._write_scope(session, scope, [(i, prepared[i]) for i in positions], batch)
                if run_id is not None:
                    self._note_written(session, run_id, batch, positions)
        if batch.created and self.after_sql_commit is not None:
            self.after_sql_commit([row.id for row in batch.created])
        self.index_rows(batch.created, batch.index_vecs)
        return [r for r in batch.results if r is not None]

    def _write_scope(
        self, session: Session, scope: str, items: list[tuple[int, _Prepared]], batch: _Batch
    ) -> None:
        error_types = sorted({p.draft.error_type for _, p in items})
        rows = session.exec(
            select(LessonRow.id, LessonRow.error_type, LessonRow.dedup_vector).where(
                LessonRow.scope == scope,
                col(LessonRow.error_type).in_(error_types),
                LessonRow.status != "merged",
                LessonRow.embedding_model == self.embedder.model_id,
            )
        ).all()
        pool: dict[str, list[tuple[str, Vector]]] = {t: [] for t in error_types}
        for lesson_id, error_type, blob in rows:
            pool[error_type].append((lesson_id, unpack(blob)))
        injected = self._injected_vectors(session, [p for _, p in items])
        for pos, p in items:
            batch.results[pos] = self._write_one(
                session, p, pool[p.draft.error_type], injected, batch
            )

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
        pool: list[tuple[str, Vector]],
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
        match = best_match(p.dedup_vec, pool)
        if match is not None and match.similarity >= self.config.dedup_similarity:
            row = session.exec(
                select(LessonRow).where(LessonRow.id == match.lesson_id).with_for_update()
            ).one()
            row.seen += 1
            row.evidence = _merge_evidence(row.evidence or [], p.draft.evidence)
            row.updated_at = utcnow()
            session.add(row)
            return AddResult(
                lesson=to_lesson(row),
                action="merged_duplicate",
                reason=f"same root cause and fix as {row.id} (similarity {match.similarity:.3f})",
            )
        now = utcnow()
        d = p.draft
        row = LessonRow(
            id=new_lesson_id(),
            scope=d.scope,
            error_type=d.error_type,
            symptom=d.symptom,
            root_cause=d.root_cause,
            fix=d.fix,
            applies_when=d.applies_when,
            evidence=evidence_json(d.evidence)[-MAX_EVIDENCE:],
            status=d.status,
            created_at=now,
            updated_at=now,
            embedding_model=self.embedder.model_id,
            dedup_vector=pack(p.dedup_vec.tolist()),
            index_state=INDEX_PENDING,
            # Explicit values: sqlmodel's default_factory path costs ~1 ms per row.
            merged_from=[],
            merged_into=None,
            seen=1,
            recalled=0,
            helped=0,
            misled=0,
        )
        # No flush per row: ids are ours, so the inserts can go out batched at commit.
        session.add(row)
        pool.append((row.id, p.dedup_vec))
        batch.created.append(row)
        batch.index_vecs[row.id] = p.index_vec
        return AddResult(lesson=to_lesson(row), action="created", reason="new lesson")

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

    def index_rows(self, rows: Sequence[LessonRow], vectors: dict[str, list[float]]) -> None:
        """Write rows to the index, then mark them indexed in SQL."""
        if not rows:
            return
        self.index.upsert(
            ids=[r.id for r in rows],
            vectors=[vectors[r.id] for r in rows],
            documents=[index_text(r.symptom, r.root_cause) for r in rows],
            metadatas=[
                lesson_metadata(r.scope, r.error_type, r.status, r.embedding_model) for r in rows
            ],
        )
        with self.db.write() as session:
            session.execute(
                update(LessonRow)
                .where(col(LessonRow.id).in_([r.id for r in rows]))
                .where(col(LessonRow.index_state) == INDEX_PENDING)
                .values(index_state=INDEX_DONE)
            )
