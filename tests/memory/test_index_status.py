"""Contract suite: the vector index holds no status, and nothing relies on it.

A status change (a merge, a deprecation, its undo) writes nothing to the index, so at 100k
lessons a consolidation pass does not rewrite ~95k entries (README, "Consolidation at
100k"). Recall therefore never asks the index to filter by status: when lessons it may not
return crowd its candidate pool, it searches again among the recallable lessons SQL names.
Entries written before carry a "status" key; `check` ignores it, recall never reads it.
Every test runs against SQLite + embedded chromadb and PostgreSQL + a Chroma server.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import replace

from memory_servers import StoreSpec

from memory import LessonDraft, LessonQuery, Memory, faults
from memory.merges import MergePlan

_DIM = 32


class MarkerEmbedder:
    """Vectors by marker word, so vector and word matches can be told apart: "askme" is the
    query's axis, "nearby" texts lie within 3 degrees of it, "further" ones at cosine 0.86;
    any other text gets a vector orthogonal to that axis (from its hash)."""

    model_id = "marker-32"
    dim = _DIM

    def _vector(self, text: str) -> list[float]:
        digest = hashlib.blake2b(text.encode(), digest_size=_DIM).digest()
        vec = [0.0] + [b / 255 - 0.5 for b in digest[1:]]
        if "askme" in text:
            vec = [1.0] + [0.0] * (_DIM - 1)
        elif "nearby" in text:
            vec = [1.0] + [0.05 * x for x in vec[1:]]
        elif "further" in text:
            vec = [1.0] + [0.0] * (_DIM - 2) + [0.6]
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [x / norm for x in vec]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


def _add(store: Memory, symptom: str, n: int, error_type: str = "ValueError") -> str:
    lesson = store.add(
        LessonDraft(
            error_type=error_type,
            symptom=symptom,
            root_cause=f"cause{n} kilo{n}",
            fix=f"fix{n} lima{n}",
        )
    ).lesson
    assert lesson is not None
    return lesson.id


def _crowded(spec: StoreSpec) -> tuple[Memory, str, list[str]]:
    """A store whose five lessons nearest the query are not recallable (three merged into
    the sixth, two deprecated), and whose recallable lesson shares no word with the query."""
    store = spec.open(MarkerEmbedder(), min_similarity=0.5)
    store.recall_config = replace(store.recall_config, candidate_pool=1)
    crowd = [_add(store, f"nearby crowd{n} shows up", n) for n in range(5)]
    kept = _add(store, "further lesson stays recallable", 9)
    for lesson_id in crowd[:3]:
        store.set_status(lesson_id, "merged", merged_into=kept)
    for lesson_id in crowd[3:]:
        store.set_status(lesson_id, "deprecated")
    return store, kept, crowd


def test_recall_finds_a_lesson_behind_a_crowd_of_unrecallable_ones(spec: StoreSpec) -> None:
    store, kept, crowd = _crowded(spec)
    try:
        # limit 1 -> a pool of 4: all taken by the crowd, above the cut.
        found = store.recall(LessonQuery(text="askme", limit=1))
        assert [s.lesson.id for s in found] == [kept]
        typed = LessonQuery(text="askme", limit=1, error_types=("ValueError",))
        assert [s.lesson.id for s in store.recall(typed)] == [kept]
        assert store.recall(typed.model_copy(update={"error_types": ("KeyError",)})) == []
    finally:
        store.close()


def test_the_typed_search_counts_a_canonical_under_its_members_types(spec: StoreSpec) -> None:
    # Recall gates a canonical on its own type and its merged members' types. When the
    # nearest recallable lessons are all of another type, the search among the recallable
    # lessons of the asked type must count the canonical too, or a merge hides its members'
    # failure kind from recall.
    store, kept, _ = _crowded(spec)
    try:
        for n in range(4):
            _add(store, f"nearby recallable{n} of another kind", 20 + n)
        member = _add(store, "a member of another kind", 30, error_type="KeyError")
        store.set_status(member, "merged", merged_into=kept)
        # The gate opens (memory has seen a KeyError: it was merged into `kept`); the nearer
        # lessons then outrank `kept` as usual.
        typed = LessonQuery(text="askme", limit=1, error_types=("KeyError",))
        assert len(store.recall(typed)) == 1
        assert store.recall(typed.model_copy(update={"error_types": ("IndexError",)})) == []
    finally:
        store.close()


def test_a_recallable_lesson_missing_from_the_index_does_not_break_the_search(
    spec: StoreSpec,
) -> None:
    # SQL names it as recallable, the index does not hold it (lost, or not indexed yet):
    # chromadb refuses a query naming an id it does not hold.
    store, kept, _ = _crowded(spec)
    try:
        lost = _add(store, "further lesson lost from the index", 8)
        faults.lose_index_entries(store, [lost])
        assert [s.lesson.id for s in store.recall(LessonQuery(text="askme", limit=1))] == [kept]
        typed = LessonQuery(text="askme", limit=1, error_types=("ValueError",))
        assert [s.lesson.id for s in store.recall(typed)] == [kept]
        faults.lose_index_entries(store, [kept])
        assert store.recall(LessonQuery(text="askme", limit=1)) == []
    finally:
        store.close()


def test_an_index_status_is_never_read(spec: StoreSpec) -> None:
    # Entries written before status left the index say "candidate" for these lessons: an
    # index filter on status would let the crowd through again, and `check` would call it
    # drift.
    store, kept, crowd = _crowded(spec)
    try:
        for lesson_id in crowd:
            faults.stale_index_status(store, lesson_id, "candidate")
        faults.stale_index_status(store, kept, "deprecated")
        assert store.check().clean
        assert [s.lesson.id for s in store.recall(LessonQuery(text="askme", limit=1))] == [kept]
    finally:
        store.close()


def test_status_changes_write_nothing_to_the_index(spec: StoreSpec) -> None:
    with spec.open() as store:
        ids = [_add(store, f"alpha{n} bravo{n} charlie{n}", n) for n in range(4)]
        before = faults.index_metadata(store, ids)
        assert set(before) == set(ids) and all("status" not in m for m in before.values())
        members = [store.get(i) for i in ids[:2]]
        record = store.apply_merge(
            MergePlan(
                scope="default",
                error_type="ValueError",
                canonical_id=None,
                leader_id=ids[0],
                member_ids=tuple(ids[:2]),
                expected={x.id: x.updated_at for x in members},
                symptom="alpha9 bravo9 charlie9",
                root_cause="cause9",
                fix="fix9",
                applies_when="",
                status="candidate",
                seen=2,
                recalled=0,
                helped=0,
                misled=0,
                evidence=(),
                merged_from=tuple(ids[:2]),
                written_by="test",
            )
        )
        assert record is not None
        store.set_status(ids[2], "deprecated")
        assert faults.index_metadata(store, ids) == before
        store.undo_merge(record.id)
        store.set_status(ids[3], "merged", merged_into=ids[0])
        assert faults.index_metadata(store, ids) == before
        assert store.check().clean
        assert [s.lesson.id for s in store.recall(LessonQuery(text="alpha0 bravo0"))] == [ids[0]]


# Exclusions (LessonQuery.exclude) must not crowd the fallbacks' searches either.
def test_excluded_lessons_filling_the_pool_do_not_hide_the_next(spec: StoreSpec) -> None:
    store = spec.open(MarkerEmbedder(), min_similarity=0.5)
    store.recall_config = replace(store.recall_config, candidate_pool=1)
    try:
        crowd = [_add(store, f"nearby crowd{n} shows up", n) for n in range(5)]
        kept = _add(store, "further lesson stays recallable", 9)
        q = LessonQuery(text="askme", limit=1, exclude=tuple(crowd))
        assert [s.lesson.id for s in store.recall(q)] == [kept]
    finally:
        store.close()


def test_an_excluded_typed_lesson_does_not_close_the_gate_on_the_next(spec: StoreSpec) -> None:
    store = spec.open(MarkerEmbedder(), min_similarity=0.5)
    store.recall_config = replace(store.recall_config, candidate_pool=1)
    try:
        for n in range(5):
            _add(store, f"nearby crowd{n} shows up", n)
        keys = [_add(store, f"further key{n} lesson", 10 + n, "KeyError") for n in range(2)]
        for gone in keys:
            q = LessonQuery(text="askme", limit=1, error_types=("KeyError",), exclude=(gone,))
            assert len(store.recall(q)) == 1, gone
    finally:
        store.close()
