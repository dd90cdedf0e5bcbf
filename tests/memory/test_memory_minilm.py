"""The real embedder (all-MiniLM-L6-v2, offline) against the calibrated default thresholds.

The numbers behind the defaults (memory/store.py) come from this corpus; if a model or
threshold change breaks these tests, recalibrate rather than loosen the assertions.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memory_corpus import LESSONS, PARAPHRASES, RELATED_QUERIES, UNRELATED_QUERIES

from memory import LessonQuery, Memory, MiniLMEmbedder
from memory.embeddings import MINILM_DIM, MINILM_MODEL_ID


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def loaded(embedder: MiniLMEmbedder) -> Iterator[tuple[Memory, dict[str, str]]]:
    memory = Memory.in_memory(embedder)
    results = memory.add_many(list(LESSONS.values()))
    assert [r.action for r in results] == ["created"] * len(LESSONS)  # no false dedup
    ids = {key: r.lesson.id for key, r in zip(LESSONS, results, strict=True) if r.lesson}
    yield memory, ids
    memory.close()


def test_embedder_is_offline_minilm(embedder: MiniLMEmbedder) -> None:
    (vec,) = embedder.embed(["UnicodeDecodeError while reading a CSV"])
    assert embedder.model_id == MINILM_MODEL_ID and len(vec) == MINILM_DIM
    assert abs(sum(x * x for x in vec) - 1.0) < 1e-4


@pytest.mark.parametrize(("text", "key"), RELATED_QUERIES)
def test_related_query_finds_its_lesson_first(
    loaded: tuple[Memory, dict[str, str]], text: str, key: str
) -> None:
    memory, ids = loaded
    hits = memory.recall(LessonQuery(text=text))
    assert hits and hits[0].lesson.id == ids[key]


@pytest.mark.parametrize("text", UNRELATED_QUERIES)
def test_unrelated_query_gets_nothing(loaded: tuple[Memory, dict[str, str]], text: str) -> None:
    memory, _ = loaded
    assert memory.recall(LessonQuery(text=text)) == []


def test_reworded_lesson_is_deduplicated_and_loop_guarded(embedder: MiniLMEmbedder) -> None:
    memory = Memory.in_memory(embedder)
    try:
        originals = {k: memory.add(LESSONS[k]).lesson for k in ("currency", "mutable_default")}
        for key, root_cause, fix in PARAPHRASES:
            if key not in originals:
                continue
            original = originals[key]
            assert original is not None
            reworded = LESSONS[key].model_copy(update={"root_cause": root_cause, "fix": fix})
            assert memory.add(reworded).action == "merged_duplicate"
            guarded = reworded.model_copy(
                update={"scope": "elsewhere", "injected_lesson_ids": (original.id,)}
            )
            assert memory.add(guarded).action == "rejected_recall_loop"
        # A different lesson of the same error type is not folded into them.
        assert memory.add(LESSONS["integer_division"]).action == "created"
        assert memory.add(LESSONS["off_by_one"]).action == "created"
    finally:
        memory.close()
