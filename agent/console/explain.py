"""Why a recalled lesson ranked where it did: memory.recall's score formula, split up.

    score = relevance + lift + recency + validated bonus - review penalty

Recall returns the score; the terms other than relevance follow from the lesson and the
store's `RecallConfig`, so relevance (the fused rank by meaning and by words) is what
remains. Pure: no store access.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from agent.console.models import SearchHit
from memory.recall import RecallConfig
from memory.recall import lift as lift_signal
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
        age_days = max(0.0, (now - lesson.updated_at).total_seconds() / 86400)
        lift_term = config.lift_weight * lift_signal(lesson)
        recency = config.recency_weight * 0.5 ** (age_days / config.recency_half_life_days)
        bonus = config.validated_bonus if lesson.status == "validated" else 0.0
        penalty = config.flagged_penalty if lesson.id in flagged else 0.0
        explained.append(
            SearchHit(
                lesson=lesson,
                similarity=hit.similarity,
                score=hit.score,
                relevance=hit.score - lift_term - recency - bonus + penalty,
                bm25=bm25.get(lesson.id),
                lift_term=lift_term,
                recency_term=recency,
                validated_bonus=bonus,
                flagged_penalty=penalty,
            )
        )
    return tuple(explained)
