"""The seed-stage gate of recall (memory.recall.passes_seed_gate) on a real in-memory store."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memory import LessonDraft, LessonQuery, Memory

LESSON = LessonDraft(scope="s", error_type="ValueError", symptom="money SYMPTOM",
                     root_cause="money CAUSE", fix="strip the currency sign")  # fmt: skip


class KeywordEmbedder:
    """Texts by keyword -> fixed unit vectors: a query's cosine to the lesson is chosen exactly."""

    model_id = "test/keyword"
    dim = 3

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    @staticmethod
    def _one(text: str) -> list[float]:
        if "SYMPTOM" in text:  # the lesson's indexed text (symptom + root cause)
            return [1.0, 0.0, 0.0]
        for word, cos in (("CLOSE", 0.7), ("MIDDLE", 0.47), ("FAR", 0.1)):
            if word in text:
                return [cos, math.sqrt(1 - cos * cos), 0.0]
        return [0.0, 0.0, 1.0]  # fix texts etc.: orthogonal


def _recall(memory: Memory, text: str, **kw: object) -> list[str]:
    query = LessonQuery(text=text, scope="s", **kw)  # type: ignore[arg-type]
    return [h.lesson.symptom for h in memory.recall(query)]


def test_seed_stage_needs_a_best_candidate_above_its_own_gate() -> None:
    gate = {"seed_min_similarity": 0.55}
    with Memory.in_memory(KeywordEmbedder(), min_similarity=0.4, **gate) as memory:
        memory.add(LESSON)
        # 0.47: above the cut, below the seed gate -> nothing at the seed stage ...
        assert _recall(memory, "MIDDLE task", stage="seed") == []
        # ... but the reflection stage (error-type gate) still answers, as before
        assert _recall(memory, "MIDDLE err", stage="reflection", error_types=("ValueError",)) == [
            LESSON.symptom
        ]
        # a query that sets its own cut is not gated
        assert _recall(memory, "MIDDLE task", stage="seed", min_similarity=0.3) == [LESSON.symptom]
        assert _recall(memory, "CLOSE task", stage="seed") == [LESSON.symptom]
        assert _recall(memory, "FAR task", stage="seed") == []


def test_seed_gate_is_off_by_default_and_then_answers_above_the_cut() -> None:
    with Memory.in_memory(KeywordEmbedder(), min_similarity=0.4) as m:
        assert m.recall_config.seed_min_similarity is None
        m.add(LESSON)
        assert _recall(m, "MIDDLE task", stage="seed") == [LESSON.symptom]
