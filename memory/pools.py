"""The dedup vectors a write compares a draft with, cached per (scope, error type).

Dedup compares a draft's root cause + fix with every unmerged lesson of its scope and error
type. Reading those vectors from SQL on every add reads tens of megabytes at 100k lessons;
this cache keeps them in one float32 matrix per (scope, error type) and brings it up to date
inside the writer's transaction, under the writer's lock, so the decision still sees every
committed lesson:

- `memory.counts` says in one indexed read whether the pair changed since the cache looked;
- if it did, the rows updated since then are read (an index on scope, error type, updated_at)
  and patched in; if the number of unmerged lessons then disagrees with the counters (a
  row left the pair, was restored with an older timestamp, was written by a clock behind
  ours), the pair is read again in full.

A writer's own new rows are patched in after its commit (`DedupPools.wrote`) without reading
them back, when the counters read inside its transaction moved by exactly those rows (then
no other change reached the pair in between).

What the cache cannot see: a dedup vector rewritten without a trigger-tracked column
changing (none of our writers does that) or a re-embedding by another process, which also
changes the model and needs the store reopened anyway. `clear()` drops everything (a
re-embedding in this process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import func
from sqlmodel import Session, col, select

from memory import counts
from memory.dedup import Match, Vector
from memory.schema import LessonRow

_PRODUCT = 1 << 23  # floats in one (queries, stored rows) similarity block: 32 MiB
_FEW = 4  # up to this many queries, one matrix-vector product each (see `VectorSet.best`)
# OpenBLAS kernels can raise the FE_INVALID flag on finite inputs (numpy #24067, OpenBLAS
# #1924), and numpy turns it into "invalid value encountered in matmul": seen once here on
# unit vectors, in a test that passed the five times before. The rows and queries are unit
# vectors, so the flag says nothing about them; overflow and division stay checked.


class VectorSet:
    """Unit vectors by id in one growable matrix: put, drop, best match by dot product."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._mat = np.zeros((16, dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, lesson_id: object) -> bool:
        return lesson_id in self._pos

    def put(self, lesson_id: str, vector: Vector) -> None:
        """Add or replace one vector."""
        pos = self._pos.get(lesson_id)
        if pos is None:
            pos = len(self._ids)
            if pos == len(self._mat):
                grown = np.zeros((2 * len(self._mat), self.dim), dtype=np.float32)
                grown[:pos] = self._mat
                self._mat = grown
            self._ids.append(lesson_id)
            self._pos[lesson_id] = pos
        self._mat[pos] = vector

    def drop(self, lesson_id: str) -> None:
        """Remove one vector (no-op when absent); the last one fills the hole."""
        pos = self._pos.pop(lesson_id, None)
        if pos is None:
            return
        last = len(self._ids) - 1
        last_id = self._ids.pop()
        if pos != last:
            self._ids[pos] = last_id
            self._pos[last_id] = pos
            self._mat[pos] = self._mat[last]

    def best_one(self, vector: Vector) -> Match | None:
        """The most similar stored vector (a small set: one product, no slicing)."""
        if not self._ids:
            return None
        with np.errstate(invalid="ignore"):  # see the OpenBLAS note above
            sims = self._mat[: len(self._ids)] @ vector
        row = int(np.argmax(sims))
        return Match(lesson_id=self._ids[row], similarity=float(sims[row]))

    def best(self, vectors: Sequence[Vector]) -> list[Match | None]:
        """The most similar stored vector of each of `vectors` (one matrix product)."""
        if not self._ids or not vectors:
            return [None] * len(vectors)
        if len(vectors) <= _FEW:
            # A matrix-vector product per query: OpenBLAS's matrix product with one or two
            # query rows is 10-20x slower (measured 17 ms against 1.5 ms at 20k rows).
            return [self.best_one(v) for v in vectors]
        queries = np.stack(vectors)
        best_sim = np.full(len(vectors), -np.inf, dtype=np.float32)
        best_row = np.zeros(len(vectors), dtype=np.int64)
        # In slices of the stored rows when there are many queries: the (queries, slice)
        # product stays small in memory (one slice for a single add: no extra passes).
        step = max(1, _PRODUCT // len(vectors))
        for start in range(0, len(self._ids), step):
            with np.errstate(invalid="ignore"):  # see the OpenBLAS note above
                sims = queries @ self._mat[start : min(start + step, len(self._ids))].T
            rows = np.argmax(sims, axis=1)
            found = sims[np.arange(len(vectors)), rows]
            better = found > best_sim  # strict: the first of equal rows wins, as argmax does
            best_sim[better], best_row[better] = found[better], rows[better] + start
        return [
            Match(lesson_id=self._ids[row], similarity=float(sim))
            for row, sim in zip(best_row.tolist(), best_sim.tolist(), strict=True)
        ]


Mark = tuple[int, int]  # a pair's (generation, unmerged) counters


def _aware(moment: datetime | None) -> datetime | None:
    # SQLite hands timestamps back naive (they are UTC), PostgreSQL aware.
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class _Pool:
    vectors: VectorSet
    others: set[str] = field(default_factory=set)  # unmerged, but of another model or size
    mark: Mark | None = None
    latest: datetime | None = None

    def apply(self, rows: Iterable[tuple[str, str, str, bytes]], model_id: str) -> None:
        for lesson_id, status, model, blob in rows:
            self.vectors.drop(lesson_id)
            self.others.discard(lesson_id)
            if status == "merged":
                continue
            vec = np.frombuffer(blob, dtype="<f4")
            if model == model_id and vec.shape == (self.vectors.dim,):
                self.vectors.put(lesson_id, vec)
            else:
                self.others.add(lesson_id)

    def size(self) -> int:
        return len(self.vectors) + len(self.others)


class DedupPools:
    """The cached dedup vectors of one store and embedding model (see the module docstring)."""

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id, self.dim = model_id, dim
        self._pools: dict[tuple[str, str], _Pool] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget everything (the store was re-embedded)."""
        with self._lock:
            self._pools.clear()

    def pools(
        self, session: Session, scope: str, error_types: Sequence[str]
    ) -> tuple[dict[str, VectorSet], dict[str, Mark | None]]:
        """The dedup vectors of the unmerged lessons of each (scope, error type) as `session`
        sees them, and the counters they were synced at (for `wrote`); call inside the
        writer's locked transaction. Do not keep the vectors past it."""
        try:
            found = counts.read_each(session, scope, error_types)
            marks: dict[str, Mark | None] = {
                t: (c.generation, c.unmerged) for t, c in found.items()
            }
        except counts.CountsUnavailable:
            marks = dict.fromkeys(error_types)  # no counters: read everything, every time
        with self._lock:
            vectors: dict[str, VectorSet] = {}
            for error_type in error_types:
                pool = self._pools.setdefault((scope, error_type), _Pool(VectorSet(self.dim)))
                self._sync(session, scope, error_type, pool, marks[error_type])
                vectors[error_type] = pool.vectors
            return vectors, marks

    def wrote(
        self,
        session: Session,
        scope: str,
        synced: Mapping[str, Mark | None],
        rows: Mapping[str, Sequence[tuple[str, Vector | None]]],
        latest: datetime,
    ) -> Callable[[], None]:
        """After the writer inserted `rows` (per error type: id and dedup vector, None for a
        merged row) in this transaction, at or before `latest`: what brings the pools up to
        date once the transaction commits. Call it only after the commit (a rolled back
        insert must not reach the cache); it does nothing where the counters moved by more
        than these rows or another sync got there first (the next sync then reads SQL)."""
        types = [t for t in rows if synced.get(t) is not None]
        try:
            after = counts.read_each(session, scope, types)
        except counts.CountsUnavailable:
            return lambda: None
        advanced: dict[str, tuple[Mark, Mark]] = {}
        for error_type in types:
            before, added = synced[error_type], rows[error_type]
            assert before is not None  # filtered above
            unmerged = sum(vec is not None for _, vec in added)
            now = (after[error_type].generation, after[error_type].unmerged)
            if now == (before[0] + len(added), before[1] + unmerged):
                advanced[error_type] = (before, now)

        def patch() -> None:
            with self._lock:
                for error_type, (before, now) in advanced.items():
                    pool = self._pools.get((scope, error_type))
                    if pool is None or pool.mark != before:
                        continue
                    for lesson_id, vec in rows[error_type]:
                        if vec is not None:
                            pool.vectors.put(lesson_id, vec)
                    pool.mark = now
                    pool.latest = latest if pool.latest is None else max(pool.latest, latest)

        return patch

    def _sync(
        self, session: Session, scope: str, error_type: str, pool: _Pool, mark: Mark | None
    ) -> None:
        unmerged = -1 if mark is None else mark[1]
        if mark is not None and mark == pool.mark:
            return
        where = (LessonRow.scope == scope, LessonRow.error_type == error_type)
        rows = select(
            LessonRow.id, LessonRow.status, LessonRow.embedding_model, LessonRow.dedup_vector
        ).where(*where)
        latest = session.exec(select(func.max(LessonRow.updated_at)).where(*where)).one()
        if pool.latest is not None and mark is not None:
            # >=: rows written in the same instant as the last look are read again.
            changed = rows.where(col(LessonRow.updated_at) >= pool.latest)
            pool.apply(session.exec(changed).all(), self.model_id)
        if pool.latest is None or mark is None or pool.size() != unmerged:
            fresh = _Pool(VectorSet(self.dim))
            fresh.apply(session.exec(rows.where(LessonRow.status != "merged")).all(), self.model_id)
            pool.vectors, pool.others = fresh.vectors, fresh.others
        pool.mark, pool.latest = mark, _aware(latest)
