"""The console's "why it ranked" splits recall's own score: its terms add back up to it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent.app.console.explain import explain
from memory.ranking import RecallConfig, score
from memory.types import Lesson, ScoredLesson, utcnow


def test_the_explained_terms_add_up_to_recalls_score() -> None:
    now = utcnow()
    config = RecallConfig(min_similarity=0.4)
    lesson = Lesson(
        id="les_1", scope="s", error_type="ValueError", symptom="x", root_cause="y", fix="z",
        status="validated", helped=3, misled=1, created_at=now - timedelta(days=30),
        updated_at=now - timedelta(days=30),
    )  # fmt: skip
    relevance = 0.73
    hit = ScoredLesson(
        lesson=lesson, similarity=0.61, score=score(relevance, lesson, config, now, flagged=True)
    )
    (explained,) = explain([hit], config=config, bm25={"les_1": 2.5}, flagged={"les_1"}, now=now)
    assert explained.relevance == pytest.approx(relevance)
    assert explained.use_term == pytest.approx(config.use_weight * 2 / 6)
    assert explained.recency_term == pytest.approx(config.recency_weight * 0.5 ** (30 / 90))
    assert explained.validated_bonus == config.validated_bonus
    assert explained.flagged_penalty == config.flagged_penalty and explained.bm25 == 2.5
