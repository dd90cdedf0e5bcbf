"""Writer processes and a consolidation pass at once on PostgreSQL + a Chroma server.

`python scripts/bench_concurrency.py` runs 8 writers x 100 lessons; this runs 4 x 25 with
the same checks: nothing lost, exact duplicates stored once, every add
counted once, every merge undoable, SQL and the index in agreement after a repair.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_servers import SERVER_MARKS, make_spec

from memory import HashEmbedder, LessonDraft, Memory
from retrospectives.consolidate import consolidate, undo
from scripts.bench_concurrency import CONSOLIDATION, reworded, run


@pytest.mark.parametrize("kind", [pytest.param("postgres", marks=SERVER_MARKS)])
def test_writers_and_consolidation_at_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    report = run(make_spec(kind, request, tmp_path), writers=4, per_writer=25, root=tmp_path)
    assert report.merges > 0  # consolidation really ran alongside the writers
    assert report.lost == 0 and report.duplicated == 0
    assert report.seen_sum_after_writes == report.adds == report.seen_sum_after_undo
    assert report.undo_failures == ()
    assert report.merged_after_undo == 0 or report.undo_blocked_by_fold > 0
    assert report.index_clean


@pytest.mark.xfail(
    strict=True,
    reason="a duplicate folded into a merge's canonical blocks the undo of that merge "
    "(open: undo refuses a canonical changed after the merge, a new sighting included)",
)
def test_a_merge_stays_undoable_after_a_duplicate_folds_into_its_canonical() -> None:
    with Memory.in_memory(HashEmbedder()) as memory:
        memory.add_many([reworded(0, 0, 0), reworded(0, 1, 1)])
        (merge,) = consolidate(memory, llm=None, config=CONSOLIDATION).merges
        canonical = memory.get(merge.canonical_id)
        again = memory.add(
            LessonDraft(
                scope=canonical.scope,
                error_type=canonical.error_type,
                symptom=canonical.symptom,
                root_cause=canonical.root_cause,
                fix=canonical.fix,
            )
        )
        assert again.action == "merged_duplicate"
        undo(memory, merge.id)


def _merge_between_commit_and_index(store: str) -> tuple[Memory, str]:
    """A lesson merged by another writer between its SQL commit and its index write."""
    with Memory.open(store, embedder=HashEmbedder()) as first:
        first.add(reworded(0, 0, 0))
    merged: list[str] = []

    def consolidate_meanwhile(ids: object) -> None:
        with Memory.open(store, embedder=HashEmbedder()) as concurrent:
            merged.extend(
                m.id for m in consolidate(concurrent, llm=None, config=CONSOLIDATION).merges
            )

    memory = Memory.open(store, embedder=HashEmbedder(), after_sql_commit=consolidate_meanwhile)
    memory.add(reworded(0, 1, 1))  # SQL commit -> the merge -> this writer's index write
    assert len(merged) == 1
    return memory, merged[0]


def test_undo_of_a_merge_that_raced_an_index_write_leaves_no_pending_lesson(
    tmp_path: Path,
) -> None:
    """Found by the concurrency run: the member was snapshotted "pending" and undo put the
    flag back long after its index write had completed: `check` reported it pending."""
    memory, merge_id = _merge_between_commit_and_index(str(tmp_path / "store"))
    with memory:
        memory.check(repair=True)
        undo(memory, merge_id)
        assert memory.check().clean


def test_a_merge_between_commit_and_index_write_leaves_the_index_in_step(
    tmp_path: Path,
) -> None:
    # The writer's late index write carries no status, so it cannot put the member's old
    # one back (an xfail until the index stopped holding status, `memory/index.py`).
    memory, _ = _merge_between_commit_and_index(str(tmp_path / "store"))
    with memory:
        assert memory.check().clean
