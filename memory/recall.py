"""Recall: nearest lessons for a query, re-ranked, diversified, cut by similarity and budget.

Read-only: counters move only through `Memory.report_use`, when the loop actually used them.

Ranking, for each candidate that passed the filters and the similarity cut:

    score = similarity
          + lift_weight    * (helped - misled) / (helped + misled + 2)    # in (-1, 1)
          + recency_weight * 0.5 ** (age_days / recency_half_life_days)  # in (0, 1]
          + validated_bonus * [status == "validated"]

Similarity dominates (it decides whether a lesson is about this situation at all); the
smoothed lift (the +2 is a Beta(1,1) prior, so one lucky run moves it little) and the recency
term only reorder lessons that are about equally relevant. Age counts from `updated_at`,
which a duplicate sighting refreshes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import col, select

from memory.db import Database
from memory.dedup import Vector, cosine, unpack
from memory.embeddings import Embedder
from memory.index import Hit, LessonIndex
from memory.render import estimate_tokens, render_lessons
from memory.schema import LessonRow, to_lesson, utcnow
from memory.types import Lesson, LessonQuery, ScoredLesson

RECALLABLE = ("candidate", "validated")
GLOBAL_SCOPE = "global"


@dataclass(frozen=True)
class RecallConfig:
    """Knobs of recall. The defaults are calibrated on all-MiniLM-L6-v2 (see README note)."""

    min_similarity: float
    # Cosine of root cause + fix embeddings above which a lower-ranked lesson is dropped as
    # saying the same thing; equal to the dedup threshold: such lessons would have been
    # merged had they shared scope and error type.
    diversity_similarity: float = 0.8
    lift_weight: float = 0.1
    recency_weight: float = 0.03
    recency_half_life_days: float = 90.0
    validated_bonus: float = 0.02
    # Nearest neighbours fetched before re-ranking: enough room for diversification.
    candidate_pool: int = 24


def lift(lesson: Lesson) -> float:
    """Smoothed helped-vs-misled signal in (-1, 1); 0 for a lesson never used."""
    return (lesson.helped - lesson.misled) / (lesson.helped + lesson.misled + 2)


def score(similarity: float, lesson: Lesson, config: RecallConfig, now: datetime) -> float:
    """The re-ranking formula of the module docstring."""
    age_days = max(0.0, (now - lesson.updated_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / config.recency_half_life_days)
    bonus = config.validated_bonus if lesson.status == "validated" else 0.0
    return float(
        similarity + config.lift_weight * lift(lesson) + config.recency_weight * recency + bonus
    )


def scopes_of(query: LessonQuery) -> list[str]:
    """The scopes a query searches: its own, plus "global" when asked."""
    scopes = [query.scope]
    if query.include_global and query.scope != GLOBAL_SCOPE:
        scopes.append(GLOBAL_SCOPE)
    return scopes


def where_clause(query: LessonQuery, *, with_status: bool = False) -> dict[str, Any] | None:
    """The chromadb filter inside a scope collection: error types (and status, slow path)."""
    clauses: list[dict[str, Any]] = []
    if query.error_types:
        clauses.append({"error_type": {"$in": list(query.error_types)}})
    if with_status:
        clauses.append({"status": {"$in": list(RECALLABLE)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _load(db: Database, ids: Sequence[str]) -> dict[str, tuple[Lesson, Vector]]:
    if not ids:
        return {}
    with db.read() as session:
        rows = session.exec(select(LessonRow).where(col(LessonRow.id).in_(list(ids)))).all()
        return {row.id: (to_lesson(row), unpack(row.dedup_vector)) for row in rows}


def _still_fits(lesson: Lesson, query: LessonQuery) -> bool:
    # The index can lag SQL (drift, concurrent status change) and status is not filtered in
    # the index at all: SQL has the last word.
    return (
        lesson.status in RECALLABLE
        and lesson.scope in scopes_of(query)
        and (not query.error_types or lesson.error_type in query.error_types)
    )


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


def _candidates(
    query: LessonQuery,
    vector: list[float],
    index: LessonIndex,
    db: Database,
    pool: int,
    cut: float,
    with_status: bool,
) -> tuple[list[tuple[Hit, Lesson, Vector]], bool]:
    """Candidates that pass the cut and SQL's filters; and whether the pool was exhausted."""
    hits = index.query(
        vector, pool, scopes=scopes_of(query), where=where_clause(query, with_status=with_status)
    )
    hits = [h for h in hits if h.similarity >= cut]
    loaded = _load(db, [h.lesson_id for h in hits])
    found = []
    for hit in hits:
        if hit.lesson_id in loaded:
            lesson, vec = loaded[hit.lesson_id]
            if _still_fits(lesson, query):
                found.append((hit, lesson, vec))
    return found, len(hits) >= pool


def recall(
    query: LessonQuery,
    *,
    embedder: Embedder,
    index: LessonIndex,
    db: Database,
    config: RecallConfig,
) -> list[ScoredLesson]:
    """Lessons for `query`, best first; empty when nothing is similar enough."""
    if query.token_budget <= 0 or not query.text.strip():
        return []
    vector = embedder.embed([query.text])[0]
    cut = config.min_similarity if query.min_similarity is None else query.min_similarity
    pool = max(config.candidate_pool, query.limit * 4)
    found, saturated = _candidates(query, vector, index, db, pool, cut, with_status=False)
    if len(found) < query.limit and saturated:
        # Deprecated/merged lessons may have crowded the unfiltered pool: ask the index to
        # filter by status (slower, so only when the fast path came up short).
        found, _ = _candidates(query, vector, index, db, pool, cut, with_status=True)
    now = utcnow()
    ranked = [
        (
            ScoredLesson(
                lesson=lesson,
                similarity=hit.similarity,
                score=score(hit.similarity, lesson, config, now),
            ),
            vec,
        )
        for hit, lesson, vec in found
    ]
    ranked.sort(key=lambda pair: pair[0].score, reverse=True)
    return _diversify(ranked, query.limit, query.token_budget, config.diversity_similarity)
