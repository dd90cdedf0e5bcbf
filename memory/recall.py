"""Recall: lessons for a query, found by meaning and by words, fused, re-ranked, diversified.

Read-only: counters move only through `Memory.report_use`, when the loop actually used them.

Candidates: the nearest lessons of the vector index and the best BM25 matches of the same
lesson texts (`memory.lexical`), in the query's scopes, recallable (SQL has the last word),
each with its cosine similarity to the query. A candidate below `min_similarity` is never
recalled, whatever its words: the cut is what lets an unrelated task get no lesson.

Error types: when the query names some (the loop sends the exception name and the feedback
kind at reflection), recall answers only if at least one lesson of those types passes the cut
(memory has seen this kind of failure; a lesson merged across error types counts under the
types of every lesson merged into it); it then ranks lessons of every type, because a root
cause shows up under several exceptions (a BOM is a KeyError in one program, a ValueError or a
JSONDecodeError in another). On the labelled set (scripts/bench_recall.py) a ranking boost for
the query's types helped nothing, so the type gates and does not reorder.

Seed gate (optional, `seed_min_similarity`): at the seed stage (task start) there is no
error type to gate on, and the cut alone hands lessons to most unrelated *error texts* sent as
seed queries (scripts/bench_recall.py, "seed stage, error text"). With the gate recall answers
only if its best candidate reaches it (all or nothing: the lessons below it that rank with the
best one stay, so hit@3 is not cut twice). A query that sets its own `min_similarity` is not
gated. Off by default: on the loop's real task-start text the 0.40 cut already gives unrelated
tasks nothing, and 0.55 drops the right lesson of most related tasks (the demo's task B too).

Ranking, for each candidate:

    relevance = (k + 1) / 2 * (1 / (k + rank_vector) + 1 / (k + rank_bm25))   # 1 = first in both
    score = relevance
          + lift_weight    * (helped - misled) / (helped + misled + 2)    # in (-1, 1)
          + recency_weight * 0.5 ** (age_days / recency_half_life_days)  # in (0, 1]
          + validated_bonus * [status == "validated"]
          - flagged_penalty * [flagged for review]                       # memory.lift.flag

Ranks are 1-based among the candidates; a candidate sharing no word with the query has no BM25
rank and that term is 0. This is reciprocal rank fusion with the standard k = 60 (Cormack et
al., 2009): it needs no calibration between cosine and BM25 scales. Adjacent ranks differ by
about 0.01 in relevance, so the smoothed lift (the +2 is a Beta(1,1) prior, so one lucky run
moves it little) and recency move a lesson a few places at most. A lesson flagged for review
(recalled into failing runs, `memory.lift.flag`) loses as much as the worst lift: it
drops below an equally relevant unflagged lesson, and out of a full recall. Age counts from
`updated_at`, which a duplicate sighting refreshes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlmodel import col, select

from memory.db import Database
from memory.dedup import Vector, cosine, unpack
from memory.embeddings import Embedder
from memory.index import Hit, LessonIndex
from memory.lexical import RECALLABLE, LexicalIndex
from memory.render import estimate_tokens, render_lessons
from memory.schema import LessonRow, ReviewRow, to_lesson, utcnow
from memory.types import Lesson, LessonQuery, ScoredLesson

GLOBAL_SCOPE = "global"


@dataclass(frozen=True)
class RecallConfig:
    """Knobs of recall. The defaults are calibrated on all-MiniLM-L6-v2 (see README note)."""

    min_similarity: float
    # Seed stage (task start, no error types to gate on): recall answers only if its best
    # candidate reaches this cosine, else nothing. None (the default): no seed gate; 0.55 is
    # the measured setting, off by default because the loop's task-start text (goal + data
    # head) rarely reaches it even for the right lesson. See "Seed gate" in the docstring.
    seed_min_similarity: float | None = None
    # Cosine of root cause + fix embeddings above which a lower-ranked lesson is dropped as
    # saying the same thing; equal to the dedup threshold: such lessons would have been
    # merged had they shared scope and error type.
    diversity_similarity: float = 0.8
    lift_weight: float = 0.1
    recency_weight: float = 0.03
    recency_half_life_days: float = 90.0
    validated_bonus: float = 0.02
    # Subtracted from a lesson flagged for review: equal to the worst lift term.
    flagged_penalty: float = 0.1
    # Reciprocal rank fusion constant: the standard 60, not tuned here.
    rrf_k: int = 60
    # Candidates fetched from each side before re-ranking: room for diversification.
    candidate_pool: int = 24


@dataclass(frozen=True)
class _Candidate:
    lesson: Lesson
    vector: Vector  # root cause + fix (diversification)
    similarity: float
    bm25: float
    flagged: bool  # for review (memory.lift)
    # Its error type and those of the lessons merged into it (consolidation merges one root
    # cause across error types): what the error-type gate looks at.
    types: frozenset[str] = frozenset()


def lift(lesson: Lesson) -> float:
    """Smoothed helped-vs-misled signal in (-1, 1); 0 for a lesson never used."""
    return (lesson.helped - lesson.misled) / (lesson.helped + lesson.misled + 2)


def fused(rank_vector: int, rank_bm25: int | None, k: int) -> float:
    """Reciprocal rank fusion of the two rankings, scaled so that first in both is 1."""
    total = 1 / (k + rank_vector) + (1 / (k + rank_bm25) if rank_bm25 is not None else 0.0)
    return total * (k + 1) / 2


@dataclass(frozen=True)
class ScoreTerms:
    """The terms `score` adds to a lesson's relevance (the penalty is subtracted)."""

    lift: float
    recency: float
    validated_bonus: float
    flagged_penalty: float

    @property
    def total(self) -> float:
        return self.lift + self.recency + self.validated_bonus - self.flagged_penalty


def score_terms(
    lesson: Lesson, config: RecallConfig, now: datetime, *, flagged: bool = False
) -> ScoreTerms:
    """Everything in the re-ranking formula but relevance (see the module docstring)."""
    age_days = max(0.0, (now - lesson.updated_at).total_seconds() / 86400)
    return ScoreTerms(
        lift=config.lift_weight * lift(lesson),
        recency=config.recency_weight * 0.5 ** (age_days / config.recency_half_life_days),
        validated_bonus=config.validated_bonus if lesson.status == "validated" else 0.0,
        flagged_penalty=config.flagged_penalty if flagged else 0.0,
    )


def score(
    relevance: float, lesson: Lesson, config: RecallConfig, now: datetime, *, flagged: bool = False
) -> float:
    """The re-ranking formula of the module docstring."""
    return float(relevance + score_terms(lesson, config, now, flagged=flagged).total)


def scopes_of(query: LessonQuery) -> list[str]:
    """The scopes a query searches: its own, plus "global" when asked."""
    scopes = [query.scope]
    if query.include_global and query.scope != GLOBAL_SCOPE:
        scopes.append(GLOBAL_SCOPE)
    return scopes


def where_clause(query: LessonQuery, *, with_status: bool = False) -> dict[str, Any] | None:
    """A chromadb filter inside a scope collection: error types (and status, slow path)."""
    clauses: list[dict[str, Any]] = []
    if query.error_types:
        clauses.append({"error_type": {"$in": list(query.error_types)}})
    if with_status:
        clauses.append({"status": {"$in": list(RECALLABLE)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


_Loaded = tuple[dict[str, tuple[Lesson, Vector]], set[str], dict[str, frozenset[str]]]


def _load(db: Database, ids: Sequence[str]) -> _Loaded:
    """The lessons by id, which are flagged for review, and each one's error types."""
    if not ids:
        return {}, set(), {}
    with db.read() as session:
        rows = session.exec(select(LessonRow).where(col(LessonRow.id).in_(list(ids)))).all()
        flagged = session.exec(
            select(ReviewRow.lesson_id).where(col(ReviewRow.lesson_id).in_(list(ids)))
        ).all()
        members = session.exec(
            select(LessonRow.merged_into, LessonRow.error_type).where(
                col(LessonRow.merged_into).in_(list(ids))
            )
        ).all()
    types = {row.id: {row.error_type} for row in rows}
    for canonical, error_type in members:
        if canonical in types:
            types[canonical].add(error_type)
    loaded = {row.id: (to_lesson(row), unpack(row.dedup_vector)) for row in rows}
    return loaded, set(flagged), {i: frozenset(ts) for i, ts in types.items()}


def _still_fits(lesson: Lesson, query: LessonQuery) -> bool:
    # The indexes can lag SQL (drift, concurrent status change) and status is not filtered in
    # the vector index at all: SQL has the last word.
    return lesson.status in RECALLABLE and lesson.scope in scopes_of(query)


def _diversify(
    ranked: list[tuple[ScoredLesson, Vector]], limit: int, budget: int, threshold: float
) -> list[ScoredLesson]:
    picked: list[tuple[ScoredLesson, Vector]] = []
    for candidate, vec in ranked:
        if len(picked) >= limit:
            break
        if any(cosine(vec, v) >= threshold for _, v in picked):
            continue  # its root cause and fix repeat an already picked lesson
        block = render_lessons([s for s, _ in picked] + [candidate])
        if estimate_tokens(block) > budget:
            continue  # a shorter, lower-ranked lesson may still fit
        picked.append((candidate, vec))
    return [s for s, _ in picked]


class _Search:
    """One recall's view of both indexes: similarities, BM25 scores, SQL rows."""

    def __init__(
        self,
        query: LessonQuery,
        vector: list[float],
        index: LessonIndex,
        lexical: LexicalIndex,
        db: Database,
        cut: float,
    ) -> None:
        self.query, self.index, self.db, self.cut = query, index, db, cut
        self.vector = np.asarray(vector, dtype=np.float32)
        self.bm25 = lexical.search(query.text, scopes_of(query))
        # Only scopes where SQL has recallable lessons (the lexical index counted them just
        # now): an empty "global" costs a vector query per recall and can add nothing.
        self.scopes = self.bm25.scopes
        self.similarity: dict[str, float] = {}

    def nearest(self, n: int, where: dict[str, Any] | None) -> list[Hit]:
        """Vector neighbours; their similarities are remembered."""
        if not self.scopes:
            return []
        hits = self.index.query(self.vector.tolist(), n, scopes=self.scopes, where=where)
        for hit in hits:
            self.similarity[hit.lesson_id] = hit.similarity
        return hits

    def lexical_top(self, n: int) -> list[str]:
        """The `n` best BM25 matches, with their similarities fetched from the index."""
        ranked = self.bm25.top(n)  # best first, ties by id
        ids = [i for i, _ in ranked]
        by_scope: dict[str, list[str]] = {}
        for i in ids:
            if i not in self.similarity:
                by_scope.setdefault(self.bm25.scope_of(i) or "", []).append(i)
        for scope, missing in by_scope.items():  # one read per scope that has some
            for lesson_id, vec in self.index.vectors(missing, scopes=[scope]).items():
                self.similarity[lesson_id] = min(
                    1.0, float(np.dot(self.vector, np.asarray(vec, dtype=np.float32)))
                )
        return ids

    def candidates(self, ids: Sequence[str]) -> list[_Candidate]:
        """Those of `ids` above the cut that SQL still calls recallable in these scopes."""
        above = [i for i in dict.fromkeys(ids) if self.similarity.get(i, -1.0) >= self.cut]
        loaded, flagged, types = _load(self.db, above)
        return [
            _Candidate(
                lesson, vec, self.similarity[i], self.bm25.get(i, 0.0), i in flagged, types[i]
            )  # fmt: skip
            for i in above
            if i in loaded
            for lesson, vec in [loaded[i]]
            if _still_fits(lesson, self.query)
        ]


def _gather(search: _Search, pool: int, limit: int) -> list[_Candidate]:
    """Vector and lexical candidates above the cut (see the module docstring)."""
    hits = search.nearest(pool, None)
    found = search.candidates([h.lesson_id for h in hits] + search.lexical_top(pool))
    # The pool is full of lessons above the cut: more may be hiding behind it.
    saturated = len(hits) >= pool and hits[-1].similarity >= search.cut
    if len(found) < limit and len(hits) >= pool:
        # Deprecated/merged lessons may have crowded the unfiltered pool: ask the index to
        # filter by status (slower, so only when the fast path came up short).
        hits = search.nearest(pool, {"status": {"$in": list(RECALLABLE)}})
        found = search.candidates([c.lesson.id for c in found] + [h.lesson_id for h in hits])
    types = frozenset(search.query.error_types)
    if types and not any(c.types & types for c in found) and saturated:
        typed = search.nearest(limit, where_clause(search.query, with_status=True))
        found = search.candidates([c.lesson.id for c in found] + [h.lesson_id for h in typed])
    if types and not any(c.types & types for c in found):
        return []  # memory has not seen this kind of failure
    return found


def _rank(
    found: list[_Candidate], config: RecallConfig, now: datetime
) -> list[tuple[ScoredLesson, Vector]]:
    by_vector = sorted(found, key=lambda c: (-c.similarity, c.lesson.id))
    by_bm25 = sorted((c for c in found if c.bm25 > 0), key=lambda c: (-c.bm25, c.lesson.id))
    rank_vector = {c.lesson.id: r for r, c in enumerate(by_vector, 1)}
    rank_bm25 = {c.lesson.id: r for r, c in enumerate(by_bm25, 1)}
    ranked = [
        (
            ScoredLesson(
                lesson=c.lesson,
                similarity=c.similarity,
                score=score(
                    fused(rank_vector[c.lesson.id], rank_bm25.get(c.lesson.id), config.rrf_k),
                    c.lesson,
                    config,
                    now,
                    flagged=c.flagged,
                ),
            ),
            c.vector,
        )
        for c in by_vector
    ]
    ranked.sort(key=lambda pair: pair[0].score, reverse=True)
    return ranked


def passes_seed_gate(query: LessonQuery, found: Sequence[_Candidate], config: RecallConfig) -> bool:
    """False when a seed-stage query's best candidate stays below `seed_min_similarity`."""
    gate = config.seed_min_similarity
    if query.stage != "seed" or gate is None or query.min_similarity is not None:
        return True
    return max((c.similarity for c in found), default=-1.0) >= gate


def recall(
    query: LessonQuery,
    *,
    embedder: Embedder,
    index: LessonIndex,
    lexical: LexicalIndex,
    db: Database,
    config: RecallConfig,
) -> list[ScoredLesson]:
    """Lessons for `query`, best first; empty when nothing is similar enough."""
    if query.token_budget <= 0 or not query.text.strip():
        return []
    cut = config.min_similarity if query.min_similarity is None else query.min_similarity
    search = _Search(query, embedder.embed([query.text])[0], index, lexical, db, cut)
    found = _gather(search, max(config.candidate_pool, query.limit * 4), query.limit)
    if not found or not passes_seed_gate(query, found, config):
        return []
    ranked = _rank(found, config, utcnow())
    return _diversify(ranked, query.limit, query.token_budget, config.diversity_similarity)
