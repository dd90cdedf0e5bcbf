"""Memory hygiene: duplicates, junk, recall loops, measured lift; and retrieval hit@k / MRR.

`quality_report(memory)` reads SQL (the source of truth) only; it changes nothing. Figures,
over the active lessons (status candidate or validated) unless said otherwise:

- duplicate rate: share of active lessons that have a near-identical active lesson in the
  same scope: cosine of their root-cause+fix embeddings (the `dedup_vector` dedup-on-write
  compares) at or above the store's dedup threshold. Dedup-on-write only compares lessons of
  the same error type, so this catches cross-type restatements and lessons whose text was
  edited later. O(n^2) per scope, in blocks: fine for stores of a few ten thousand lessons.
- junk rate: share of active lessons never recalled, or flagged for review by the lift
  policy (recalled into failing runs). A brand-new lesson counts as never recalled: read
  `never_recalled` next to the store's age.
- recall-loop rate: of the lessons runs wrote, the share that restate a lesson the same run
  was given (cosine >= the store's loop threshold): learning back what memory just said.
  The write path rejects these; a non-zero rate means the guard leaks.
- lift share: share of active lessons with a measured lift (used in a finished run, and a
  baseline of runs without it exists; see memory.lift), and how many of those helped.

`top_lessons(memory)` lists the most helpful lessons for reports. `ranking_metrics` scores a
labelled retrieval set (hit@1, hit@3, MRR) for scripts/bench_recall.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from sqlmodel import col, select

from memory.dedup import Vector, unpack
from memory.lift import LessonLift
from memory.schema import LessonRow, RunRow, to_lesson
from memory.store import Memory
from memory.types import ACTIVE, Lesson

_BLOCK = 512  # rows per block of the pairwise similarity product (memory ~ 512 x n floats)
_MAX_PAIRS = 20


class DuplicatePair(BaseModel):
    """Two active lessons of one scope that say the same thing."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    scope: str
    similarity: float


class QualityReport(BaseModel):
    """The hygiene figures of the module docstring; a rate is None when nothing is counted."""

    model_config = ConfigDict(frozen=True)

    lessons: int
    active: int
    by_status: dict[str, int]
    duplicate_threshold: float
    duplicate_lessons: int
    duplicate_rate: float | None
    duplicate_pairs: tuple[DuplicatePair, ...]
    never_recalled: int
    flagged: int
    junk_lessons: int
    junk_rate: float | None
    runs: int
    finished_runs: int
    aborted_runs: int  # ended without an outcome: a crashed model, an interrupt
    written: int
    recall_loops: int
    recall_loop_rate: float | None
    with_lift: int
    helpful: int
    lift_share: float | None


class LessonStanding(BaseModel):
    """A lesson with its lift statistics (None when it was never used in a finished run)."""

    model_config = ConfigDict(frozen=True)

    lesson: Lesson
    lift: LessonLift | None


def _rate(part: float, whole: int) -> float | None:
    return part / whole if whole else None


def _duplicates(
    vectors: dict[str, list[tuple[str, Vector]]], threshold: float
) -> tuple[set[str], list[DuplicatePair]]:
    """Lessons with a near-identical partner in their scope, and the closest pairs."""
    involved: set[str] = set()
    pairs: list[DuplicatePair] = []
    for scope, items in vectors.items():
        dim = {v.shape for _, v in items}
        if len(items) < 2 or len(dim) != 1:
            continue  # mixed dimensions cannot be compared (a store mid re-embedding)
        ids = [i for i, _ in items]
        matrix = np.stack([v for _, v in items])
        for start in range(0, len(ids), _BLOCK):
            sims = matrix[start : start + _BLOCK] @ matrix.T
            rows, cols = np.nonzero(sims >= threshold)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                i = start + r
                if c <= i:
                    continue  # each pair once, never a lesson with itself
                involved.update((ids[i], ids[c]))
                pairs.append(
                    DuplicatePair(
                        a=ids[i], b=ids[c], scope=scope, similarity=round(float(sims[r, c]), 4)
                    )
                )
    pairs.sort(key=lambda p: -p.similarity)
    return involved, pairs[:_MAX_PAIRS]


def _flagged(memory: Memory) -> set[str]:
    return {flag.lesson_id for flag in memory.review_flags()}


def _recall_loops(runs: Sequence[RunRow], vectors: dict[str, Vector], threshold: float) -> int:
    loops = 0
    for run in runs:
        given = [vectors[i] for i in run.recalled_lesson_ids or () if i in vectors]
        for written in run.written_lesson_ids or ():
            if written in (run.recalled_lesson_ids or ()):
                loops += 1  # folded into the very lesson it was given
                continue
            vec = vectors.get(written)
            if vec is not None and any(
                g.shape == vec.shape and float(g @ vec) >= threshold for g in given
            ):
                loops += 1
    return loops


def quality_report(memory: Memory) -> QualityReport:
    """Hygiene figures of `memory` (read-only)."""
    with memory._db.read() as session:
        rows = [
            (r.id, r.scope, r.status, r.recalled, r.dedup_vector)
            for r in session.exec(select(LessonRow)).all()
        ]
        runs = session.exec(select(RunRow)).all()
    by_status: dict[str, int] = defaultdict(int)
    by_scope: dict[str, list[tuple[str, Vector]]] = defaultdict(list)
    vectors: dict[str, Vector] = {}
    active: list[str] = []
    never: set[str] = set()
    for lesson_id, scope, status, recalled, blob in rows:
        by_status[status] += 1
        if blob:
            vectors[lesson_id] = unpack(blob)
        if status not in ACTIVE:
            continue
        active.append(lesson_id)
        if blob:
            by_scope[scope].append((lesson_id, vectors[lesson_id]))
        if recalled == 0:
            never.add(lesson_id)
    threshold = memory.write_config.dedup_similarity
    dup_ids, pairs = _duplicates(by_scope, threshold)
    flagged = _flagged(memory) & set(active)
    written = sum(len(r.written_lesson_ids or ()) for r in runs)
    loops = _recall_loops(runs, vectors, memory.write_config.loop_similarity)
    lifts = memory.lesson_lift(active) if active else []
    measured = [s for s in lifts if s.lift is not None]
    return QualityReport(
        lessons=len(rows),
        active=len(active),
        by_status=dict(by_status),
        duplicate_threshold=threshold,
        duplicate_lessons=len(dup_ids),
        duplicate_rate=_rate(len(dup_ids), len(active)),
        duplicate_pairs=tuple(pairs),
        never_recalled=len(never),
        flagged=len(flagged),
        junk_lessons=len(never | flagged),
        junk_rate=_rate(len(never | flagged), len(active)),
        runs=len(runs),
        finished_runs=sum(r.passed is not None for r in runs),
        aborted_runs=sum(r.passed is None and bool(r.error) for r in runs),
        written=written,
        recall_loops=loops,
        recall_loop_rate=_rate(loops, written),
        with_lift=len(measured),
        helpful=sum(1 for s in measured if (s.lift or 0) > 0),
        lift_share=_rate(len(measured), len(active)),
    )


def top_lessons(memory: Memory, limit: int = 10) -> list[LessonStanding]:
    """The most helpful active lessons: by runs helped, then lift, then times recalled."""
    with memory._db.read() as session:
        rows = session.exec(
            select(LessonRow)
            .where(col(LessonRow.status).in_(list(ACTIVE)))
            .order_by(col(LessonRow.helped).desc(), col(LessonRow.recalled).desc())
            .limit(max(limit * 5, limit))
        ).all()
        lessons = [to_lesson(r) for r in rows]
    lifts = {s.lesson_id: s for s in memory.lesson_lift([x.id for x in lessons])}
    ranked = sorted(
        lessons,
        key=lambda x: (
            -x.helped,
            -((lifts[x.id].lift or 0.0) if x.id in lifts else 0.0),
            -x.recalled,
            x.misled,
        ),
    )
    return [LessonStanding(lesson=x, lift=lifts.get(x.id)) for x in ranked[:limit]]


class RankingMetrics(BaseModel):
    """Retrieval quality on labelled queries; `empty`: queries that got no lesson at all."""

    model_config = ConfigDict(frozen=True)

    n: int
    hit_at_1: float
    hit_at_3: float
    mrr: float
    empty: int


def ranking_metrics(rankings: Sequence[Sequence[str]], targets: Sequence[str]) -> RankingMetrics:
    """hit@1, hit@3 and MRR of ranked id lists against one target id per query.

    A target absent from its ranking scores 0 (also in MRR): a cut that hides the right
    lesson costs the same as ranking it nowhere.
    """
    if len(rankings) != len(targets):
        raise ValueError(f"{len(rankings)} rankings for {len(targets)} targets")
    ranks = [
        list(r).index(t) + 1 if t in r else None for r, t in zip(rankings, targets, strict=True)
    ]
    n = len(targets)
    return RankingMetrics(
        n=n,
        hit_at_1=_rate(sum(r == 1 for r in ranks), n) or 0.0,
        hit_at_3=_rate(sum(r is not None and r <= 3 for r in ranks), n) or 0.0,
        mrr=_rate(sum(1 / r for r in ranks if r is not None), n) or 0.0,
        empty=sum(1 for r in rankings if not r),
    )


def no_lesson_rate(rankings: Sequence[Sequence[object]]) -> float | None:
    """Share of queries that got an empty recall (for unrelated queries: higher is better)."""
    return _rate(sum(1 for r in rankings if not r), len(rankings))
