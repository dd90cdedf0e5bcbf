"""The root-cause vectors consolidation clusters on, cached in SQL (`consolidation_vectors`).

Embedding is the slow part of a consolidation pass, so every lesson is embedded once, when a
pass first sees it; `processed` then marks what earlier passes have clustered, which is what
makes a pass incremental (only unprocessed lessons are clustered) and resumable. The
clustering itself (a decision) lives in `retrospectives.cluster`; this module only stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import delete, func, or_, update
from sqlmodel import Session, col, select

from memory.db import Database
from memory.dedup import pack, unpack
from memory.embeddings import Embedder
from memory.schema import LessonRow, RootCauseVectorRow
from memory.types import ACTIVE

Matrix = NDArray[np.float32]
Bucket = tuple[str, str]  # (scope, error_type), or (scope, ALL_TYPES) across error types
# A root cause shows up under several error types: consolidation may cluster a whole scope.
ALL_TYPES = "*"
_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement


def _matrix(vectors: Sequence[Matrix], dim: int) -> Matrix:
    if len(vectors) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(vectors, dtype=np.float32).reshape(len(vectors), dim)


@dataclass
class BucketVectors:
    """The root-cause vectors of one (scope, error type) bucket, in arrival order:
    lessons an earlier pass processed ("old") and the rest ("new")."""

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
    return col(RootCauseVectorRow.lesson_id) == col(LessonRow.id)


def embed_pending(db: Database, embedder: Embedder, *, page: int = 2048) -> int:
    """Embed the root cause of every active lesson that has no cached vector; returns how many."""
    done = 0
    while True:
        with db.read() as session:
            rows = session.exec(
                select(LessonRow.id, LessonRow.root_cause)
                .outerjoin(RootCauseVectorRow, _join())  # type: ignore[arg-type]
                .where(col(LessonRow.status).in_(ACTIVE))
                .where(col(RootCauseVectorRow.lesson_id).is_(None))
                .limit(page)
            ).all()
        if not rows:
            return done
        vectors = embedder.embed([root for _, root in rows])
        with db.write() as session:
            # Locked, so an edit waits for this commit and then drops what it made stale; a
            # root cause edited while it was embedded is left for the next round.
            now = dict(
                session.exec(
                    select(LessonRow.id, LessonRow.root_cause)
                    .where(col(LessonRow.id).in_([i for i, _ in rows]))
                    .with_for_update()
                ).all()
            )
            for (lesson_id, root), vec in zip(rows, vectors, strict=True):
                if (
                    now.get(lesson_id) == root
                    and session.get(RootCauseVectorRow, lesson_id) is None
                ):
                    session.add(
                        RootCauseVectorRow(
                            lesson_id=lesson_id, embedding_model=embedder.model_id, vector=pack(vec)
                        )
                    )
        done += len(rows)


def buckets(db: Database, *, full: bool, across_types: bool = False) -> list[Bucket]:
    """(scope, error type) pairs with unprocessed active lessons (all of them when `full`).

    `across_types`: one bucket per scope, `(scope, ALL_TYPES)`; never across scopes.
    """
    found = _buckets(db, full=full)
    if across_types:
        return sorted({(scope, ALL_TYPES) for scope, _ in found})
    return found


def _buckets(db: Database, *, full: bool) -> list[Bucket]:
    with db.read() as session:
        query = (
            select(LessonRow.scope, LessonRow.error_type)
            .join(RootCauseVectorRow, _join())  # type: ignore[arg-type]
            .where(col(LessonRow.status).in_(ACTIVE))
            .distinct()
        )
        if not full:
            query = query.where(col(RootCauseVectorRow.processed).is_(False))
        return sorted((s, t) for s, t in session.exec(query).all())


def bucket_vectors(
    db: Database, embedder: Embedder, bucket: Bucket, *, full: bool
) -> BucketVectors:
    """The bucket's active lessons in arrival order, split into processed and new.

    A `(scope, ALL_TYPES)` bucket holds the scope's lessons of every error type.
    """
    scope, error_type = bucket
    query = (
        select(LessonRow.id, RootCauseVectorRow.processed, RootCauseVectorRow.vector)
        .join(RootCauseVectorRow, _join())  # type: ignore[arg-type]
        .where(LessonRow.scope == scope)
        .where(col(LessonRow.status).in_(ACTIVE))
        .where(RootCauseVectorRow.embedding_model == embedder.model_id)
        .order_by(col(LessonRow.created_at), col(LessonRow.id))
    )
    if error_type != ALL_TYPES:
        query = query.where(LessonRow.error_type == error_type)
    with db.read() as session:
        rows = session.exec(query).all()
    old = [(i, v) for i, p, v in rows if p and not full]
    new = [(i, v) for i, p, v in rows if full or not p]
    return BucketVectors(
        old_ids=[i for i, _ in old],
        old=_matrix([unpack(v) for _, v in old], embedder.dim),
        new_ids=[i for i, _ in new],
        new=_matrix([unpack(v) for _, v in new], embedder.dim),
    )


def cause_texts(db: Database, ids: Sequence[str]) -> list[str]:
    """Root cause + fix of each lesson, in the order of `ids` (what clustering compares)."""
    found: dict[str, str] = {}
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        with db.read() as session:
            rows = session.exec(
                select(LessonRow.id, LessonRow.root_cause, LessonRow.fix).where(
                    col(LessonRow.id).in_(chunk)
                )
            ).all()
        found.update({i: f"{root} {fix}" for i, root, fix in rows})
    return [found[i] for i in ids]


def unprocessed_count(db: Database) -> int:
    """Active lessons no pass has clustered yet (with or without a cached vector)."""
    with db.read() as session:
        count = session.exec(
            select(func.count())
            .select_from(LessonRow)
            .outerjoin(RootCauseVectorRow, _join())  # type: ignore[arg-type]
            .where(col(LessonRow.status).in_(ACTIVE))
            .where(
                or_(
                    col(RootCauseVectorRow.lesson_id).is_(None),
                    col(RootCauseVectorRow.processed).is_(False),
                )
            )
        ).one()
    return int(count)


def forget_vectors(session: Session, ids: Sequence[str]) -> None:
    """Drop the cached vectors of lessons whose clustering text or bucket changed (an edit,
    an import that replaced them): the next pass embeds them again and takes them as new."""
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        session.execute(
            delete(RootCauseVectorRow).where(col(RootCauseVectorRow.lesson_id).in_(chunk))
        )


def mark_processed(db: Database, ids: Sequence[str]) -> None:
    """Remember that a pass has clustered these lessons."""
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        with db.write() as session:
            session.execute(
                update(RootCauseVectorRow)
                .where(col(RootCauseVectorRow.lesson_id).in_(chunk))
                .values(processed=True)
            )


def fix_vectors(db: Database, embedder: Embedder, ids: Sequence[str]) -> dict[str, list[float]]:
    """Embeddings of the fixes of `ids` (one batch; unknown ids are left out)."""
    fixes: dict[str, str] = {}
    for start in range(0, len(ids), _SQL_CHUNK):
        chunk = list(ids[start : start + _SQL_CHUNK])
        with db.read() as session:
            rows = session.exec(
                select(LessonRow.id, LessonRow.fix).where(col(LessonRow.id).in_(chunk))
            ).all()
        fixes.update(dict(rows))
    # Each distinct text once: lessons of one root cause often carry the very same fix.
    texts = list(dict.fromkeys(fixes.values()))
    by_text = dict(zip(texts, embedder.embed(texts), strict=True))
    return {k: by_text[text] for k, text in fixes.items()}
