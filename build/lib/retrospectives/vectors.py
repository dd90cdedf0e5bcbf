"""The root-cause vectors a consolidator clusters on, cached in SQL (`consolidation_vectors`).

Embedding is the slow part of a pass, so every lesson is embedded once, when a pass first
sees it; `processed` then marks what earlier passes have clustered, which is what makes a
pass incremental (only unprocessed lessons are clustered) and resumable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import func, or_, update
from sqlmodel import col, select

from memory import merges
from memory.dedup import pack, unpack
from memory.schema import LessonRow
from memory.store import Memory
from retrospectives.cluster import Matrix, as_matrix

Bucket = tuple[str, str]  # (scope, error_type)
_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement


@dataclass
class BucketVectors:
    """The vectors of one bucket: processed lessons ("old") and the rest ("new")."""

    old_ids: list[str]
    old: Matrix
    new_ids: list[str]
    new: Matrix
    _pos: dict[str, tuple[bool, int]] = field(default_factory=dict)

    def vector(self, lesson_id: str) -> Matrix:
        """The vector of one lesson of the bucket."""
        if not self._pos:
            self._pos = {i: (True, n) for n, i in enumerate(self.old_ids)}
            self._pos.update({i: (False, n) for n, i in enumerate(self.new_ids)})
        is_old, n = self._pos[lesson_id]
        return np.asarray(self.old[n] if is_old else self.new[n], dtype=np.float32)


def _join() -> object:
    return col(merges.RootCauseVectorRow.lesson_id) == col(LessonRow.id)


def embed_pending(memory: Memory, *, page: int = 2048) -> int:
    """Embed the root cause of every active lesson that has no cached vector; returns how many."""
    model = memory.embedder.model_id
    done = 0
    while True:
        with memory.db.read() as session:
            rows = session.exec(
                select(LessonRow.id, LessonRow.root_cause)
                .outerjoin(merges.RootCauseVectorRow, _join())  # type: ignore[arg-type]
                .where(col(LessonRow.status).in_(merges.ACTIVE))
                .where(col(merges.RootCauseVectorRow.lesson_id).is_(None))
                .limit(page)
            ).all()
        if not rows:
            return done
        vectors = memory.embedder.embed([root for _, root in rows])
        with memory.db.write() as session:
            for (lesson_id, _), vec in zip(rows, vectors, strict=True):
                if session.get(merges.RootCauseVectorRow, lesson_id) is None:
                    session.add(
                        merges.RootCauseVectorRow(
                            lesson_id=lesson_id, embedding_model=model, vector=pack(vec)
                        )
                    )
        done += len(rows)


def buckets(memory: Memory, *, full: bool) -> list[Bucket]:
    """(scope, error type) pairs with unprocessed active lessons (all of them when `full`)."""
    with memory.db.read() as session:
        query = (
            select(LessonRow.scope, LessonRow.error_type)
            .join(merges.RootCauseVectorRow, _join())  # type: ignore[arg-type]
            .where(col(LessonRow.status).in_(merges.ACTIVE))
            .distinct()
        )
        if not full:
            query = query.where(col(merges.RootCauseVectorRow.processed).is_(False))
        return sorted((s, t) for s, t in session.exec(query).all())


def bucket_vectors(memory: Memory, bucket: Bucket, *, full: bool) -> BucketVectors:
    """The bucket's active lessons in arrival order, split into processed and new."""
    scope, error_type = bucket
    with memory.db.read() as session:
        rows = session.exec(
            select(
                LessonRow.id,
                merges.RootCauseVectorRow.processed,
                merges.RootCauseVectorRow.vector,
            )
            .join(merges.RootCauseVectorRow, _join())  # type: ignore[arg-type]
            .where(LessonRow.scope == scope, LessonRow.error_type == error_type)
            .where(col(LessonRow.status).in_(merges.ACTIVE))
            .where(merges.RootCauseVectorRow.embedding_model == memory.embedder.model_id)
            .order_by(col(LessonRow.created_at), col(LessonRow.id))
        ).all()
    dim = memory.embedder.dim
    old = [(i, v) for i, p, v in rows if p and not full]
    new = [(i, v) for i, p, v in rows if full or not p]
    return BucketVectors(
        old_ids=[i for i, _ in old],
        old=as_matrix([unpack(v) for _, v in old], dim),
        new_ids=[i for i, _ in new],
        new=as_matrix([unpack(v) for _, v in new], dim),
    )


def unprocessed_count(memory: Memory) -> int:
    """Active lessons no pass has clustered yet (with or without a cached vector)."""
    vec = merges.RootCauseVectorRow
    with memory.db.read() as session:
        count = session.exec(
            select(func.count())
            .select_from(LessonRow)
            .outerjoin(vec, _join())  # type: ignore[arg-type]
            .where(col(LessonRow.status).in_(merges.ACTIVE))
            .where(or_(col(vec.lesson_id).is_(None), col(vec.processed).is_(False)))
        ).one()
    return int(count)


def mark_processed(memory: Memory, ids: Sequence[str]) -> None:
    """Remember that a pass has clustered these lessons."""
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        with memory.db.write() as session:
            session.execute(
                update(merges.RootCauseVectorRow)
                .where(col(merges.RootCauseVectorRow.lesson_id).in_(chunk))
                .values(processed=True)
            )
