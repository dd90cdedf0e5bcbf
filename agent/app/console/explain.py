"""Why a recalled lesson ranked where it did: memory.recall's score formula, split up.

    score = relevance + lift + recency + validated bonus - review penalty

Recall returns the score; the terms other than relevance come from `memory.ranking.score_terms`
(the formula's one definition), so relevance (the fused rank by meaning and by words) is what
remains. Pure: no store access.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from agent.app.console.models import SearchHit
from memory.ranking import RecallConfig, score_terms
from memory.types import ScoredLesson


def explain(
    hits: Sequence[ScoredLesson],
    *,
    config: RecallConfig,
    bm25: Mapping[str, float],
    flagged: set[str],
    now: datetime,
) -> tuple[SearchHit, ...]:
    """Each hit with the terms of its score."""
    explained = []
    for hit in hits:
        lesson = hit.lesson
        terms = score_terms(lesson, config, now, flagged=lesson.id in flagged)
        explained.append(
            SearchHit(
                lesson=lesson,
                similarity=hit.similarity,
                score=hit.score,
                relevance=hit.score - terms.total,
                bm25=bm25.get(lesson.id),
                use_term=terms.use,
                recency_term=terms.recency,
                validated_bonus=terms.validated_bonus,
                flagged_penalty=terms.flagged_penalty,
            )
        )
    return tuple(explained)
