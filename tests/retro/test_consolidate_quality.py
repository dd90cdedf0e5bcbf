"""Consolidation quality on a labelled set (real MiniLM embeddings): purity and duplicate rate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from memory.embeddings import MiniLMEmbedder
from memory.store import Memory
from memory.types import LessonFilter
from retrospectives.consolidate import consolidate, undo
from tests.retro.labelled import GROUPS, labelled_set


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def memory(embedder: MiniLMEmbedder) -> Iterator[Memory]:
    # Write-time dedup off, so the "before" figures are those of an unconsolidated store.
    with Memory.in_memory(embedder, dedup_similarity=1.01) as m:
        yield m


def quality(memory: Memory, label_of: dict[str, str]) -> tuple[float, float, int]:
    """(purity, duplicate rate, active lessons) over the stored lessons."""
    lessons = memory.list_lessons(LessonFilter(limit=1000)).items
    active = [les for les in lessons if les.status != "merged"]
    members = [[label_of[i] for i in (les.merged_from or (les.id,))] for les in active]
    majority = [Counter(m).most_common(1)[0] for m in members]
    purity = sum(count for _, count in majority) / sum(len(m) for m in members)
    labels = [label for label, _ in majority]
    duplicate_rate = (len(labels) - len(set(labels))) / len(labels)
    return purity, duplicate_rate, len(active)


def test_consolidation_purity_and_duplicate_rate(memory: Memory) -> None:
    items = labelled_set()
    assert len(items) >= 200 and len(GROUPS) >= 20
    results = memory.add_many([i.draft for i in items])
    label_of = {r.lesson.id: i.label for r, i in zip(results, items, strict=True) if r.lesson}
    before = quality(memory, label_of)
    report = consolidate(memory, llm=None)
    after = quality(memory, label_of)
    print(
        f"\nlabelled set: {len(items)} drafts, {len(GROUPS)} groups + singletons; "
        f"{len(report.merges)} merges\n"
        f"purity {before[0]:.3f} -> {after[0]:.3f}; duplicate rate {before[1]:.3f} -> "
        f"{after[1]:.3f}; active lessons {before[2]} -> {after[2]}"
    )
    assert after[0] >= 0.95  # merges are precise: few lessons end up in a foreign cluster
    assert after[1] <= before[1] - 0.25  # and they remove a real share of the duplicates
    assert consolidate(memory, llm=None).merges == ()  # second pass: no-op
    snapshot = memory.list_lessons(LessonFilter(limit=1000)).items
    for merge in reversed(report.merges):
        undo(memory, merge.id)
    restored = memory.list_lessons(LessonFilter(limit=1000)).items
    assert all(les.status == "candidate" for les in restored) and len(restored) == len(items)
    assert len(snapshot) == len(items) + len(report.merges)
