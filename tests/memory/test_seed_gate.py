"""The seed stage of recall (memory.recall: seed gate, seed cut margin, surface views) on a
real in-memory store, with an embedder whose cosines are chosen exactly."""

from __future__ import annotations

from memory import LessonDraft, LessonQuery, Memory
from memory.embeddings import KeywordEmbedder
from tests.memory.keyword_vectors import LESSONS, unit

VECTORS = {
    **LESSONS,
    "BOTH": unit(0.7, 0.35),  # 0.7 to A, 0.35 to B
    "NEAR_B": unit(0.0, 0.35),  # 0.35 to B only
    "MIDDLE": unit(0.47),  # 0.47 to A
    "CLOSE": unit(0.7),
    "FAR": unit(0.1),
}


def _embedder() -> KeywordEmbedder:
    return KeywordEmbedder(VECTORS, model_id="test/keyword")


def lesson(x: str) -> LessonDraft:
    return LessonDraft(scope="s", error_type="ValueError", symptom=f"money SYMPTOM_{x}",
                       root_cause=f"CAUSE_{x}", fix=f"fix {x}")  # fmt: skip


A, B = lesson("A"), lesson("B")


def _recall(memory: Memory, text: str, **kw: object) -> list[str]:
    query = LessonQuery(text=text, scope="s", **kw)  # type: ignore[arg-type]
    return [h.lesson.symptom for h in memory.recall(query)]


def test_seed_stage_answers_when_the_best_reaches_the_cut_and_then_takes_near_lessons() -> None:
    margin = {"seed_cut_margin": 0.10}
    with Memory.in_memory(_embedder(), min_similarity=0.4, **margin) as memory:
        memory.add_many([A, B])
        # Best 0.7 >= 0.4: B at 0.35 (within the 0.10 margin below the cut) ranks beside it.
        assert _recall(memory, "BOTH task", stage="seed") == [A.symptom, B.symptom]
        # B alone at 0.35 is below the gate: nothing.
        assert _recall(memory, "NEAR_B task", stage="seed") == []
        # Reflection has its error-type gate and keeps the plain cut: B stays out.
        assert _recall(memory, "BOTH err", stage="reflection", error_types=("ValueError",)) == [
            A.symptom
        ]
        # A query that sets its own cut gets exactly that cut.
        assert _recall(memory, "BOTH task", stage="seed", min_similarity=0.5) == [A.symptom]


def test_no_margin_by_default_keeps_the_plain_cut() -> None:
    with Memory.in_memory(_embedder(), min_similarity=0.4) as m:
        m.add_many([A, B])
        assert _recall(m, "BOTH task", stage="seed") == [A.symptom]


def test_a_higher_seed_gate_silences_middling_seed_queries_only() -> None:
    gate = {"seed_min_similarity": 0.55}
    with Memory.in_memory(_embedder(), min_similarity=0.4, **gate) as memory:
        memory.add(A)
        # 0.47: above the cut, below the seed gate -> nothing at the seed stage ...
        assert _recall(memory, "MIDDLE task", stage="seed") == []
        # ... but the reflection stage (error-type gate) still answers, as before
        assert _recall(memory, "MIDDLE err", stage="reflection", error_types=("ValueError",)) == [
            A.symptom
        ]
        # a query that sets its own cut is not gated
        assert _recall(memory, "MIDDLE task", stage="seed", min_similarity=0.3) == [A.symptom]
        assert _recall(memory, "CLOSE task", stage="seed") == [A.symptom]
        assert _recall(memory, "FAR task", stage="seed") == []


def test_a_surface_view_counts_with_its_best_cosine() -> None:
    with Memory.in_memory(_embedder(), min_similarity=0.4) as memory:
        memory.add_many([A, B])
        # The text alone is far from every lesson ...
        assert _recall(memory, "FAR goal", stage="seed") == []
        # ... one view of the data is close to A: A's similarity is its best over the views.
        query = LessonQuery(text="FAR goal", surface=("head CLOSE", "other head"), scope="s")
        hits = memory.recall(query)
        assert [h.lesson.symptom for h in hits] == [A.symptom]
        assert abs(hits[0].similarity - 0.7) < 1e-5
        # Blank views are ignored, not embedded as queries.
        assert _recall(memory, "FAR goal", surface=("  ",)) == []


def test_a_far_stronger_word_match_outranks_a_slightly_closer_cosine() -> None:
    # A at 0.7, B at 0.35 + the shared rare words: with the cut at 0.3 both are candidates.
    symptom = "money SYMPTOM_B '€1.234,50' '€ 99' decimal comma euro"
    words_b = LessonDraft(scope="s", error_type="ValueError", root_cause="CAUSE_B", fix="fix B",
                          symptom=symptom)  # fmt: skip
    with Memory.in_memory(_embedder(), min_similarity=0.3) as memory:
        memory.add_many([A, words_b])
        plain = _recall(memory, "BOTH task", stage="seed")
        assert plain[0] == A.symptom  # no words shared: the cosine decides
        shared = _recall(memory, "BOTH task '€ 7' '€2.000,10' euro decimal comma", stage="seed")
        assert shared[0] == words_b.symptom  # relative fusion: B's BM25 is all of the best
