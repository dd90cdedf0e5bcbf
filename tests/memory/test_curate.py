"""Curation (memory/curate.py): allowed status changes, clear refusals, store-wide counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, LessonNotFoundError, LessonQuery, Memory
from memory.curate import TransitionError, approve, deprecate, lesson_stats, restore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory.open(str(tmp_path / "m.sqlite3"), embedder=HashEmbedder())
    yield memory
    memory.close()


def add(memory: Memory, n: int, error_type: str = "runtime_error", **fields: object) -> str:
    values: dict[str, object] = {
        "error_type": error_type,
        "symptom": f"alpha{n} bravo{n}",
        "root_cause": f"charlie{n}",
        "fix": f"delta{n}",
    }
    values.update(fields)
    result = memory.add(LessonDraft.model_validate(values))
    assert result.lesson is not None
    return result.lesson.id


def test_approve_only_from_candidate(store: Memory) -> None:
    a, b, c = add(store, 1), add(store, 2), add(store, 3)
    store.set_status(c, "merged", merged_into=a)
    assert approve(store, a).status == "validated"
    with pytest.raises(TransitionError, match=f"lesson {a} is already validated"):
        approve(store, a)
    deprecate(store, b)
    with pytest.raises(TransitionError, match="it is deprecated; only candidate lessons"):
        approve(store, b)
    with pytest.raises(TransitionError, match=f"merged into {a}"):
        approve(store, c)
    with pytest.raises(LessonNotFoundError):
        approve(store, "les_nope")
    assert [store.get(i).status for i in (a, b, c)] == ["validated", "deprecated", "merged"]


def test_restore_only_from_deprecated(store: Memory) -> None:
    a, b, c = add(store, 1), add(store, 2, status="validated"), add(store, 3)
    store.set_status(c, "merged", merged_into=b)
    deprecate(store, a)
    assert restore(store, a).status == "candidate"
    assert [s.lesson.id for s in store.recall(LessonQuery(text="alpha1 bravo1"))] == [a]
    with pytest.raises(TransitionError, match="already candidate"):
        restore(store, a)
    with pytest.raises(TransitionError, match="only deprecated lessons can become candidate"):
        restore(store, b)
    with pytest.raises(TransitionError, match="undo the merge"):
        restore(store, c)


def test_deprecate_from_candidate_or_validated(store: Memory) -> None:
    a, b, c = add(store, 1), add(store, 2, status="validated"), add(store, 3)
    store.set_status(c, "merged", merged_into=a)
    assert deprecate(store, a).status == "deprecated"
    assert deprecate(store, b).status == "deprecated"
    with pytest.raises(TransitionError, match="already deprecated"):
        deprecate(store, a)
    with pytest.raises(TransitionError, match="undo the merge"):
        deprecate(store, c)
    assert store.get(c).merged_into == a  # the refusal left the merge link alone


def test_stats_counts_helpful_and_never_used(store: Memory) -> None:
    ids = [add(store, n, "runtime_error" if n < 4 else "syntax_error") for n in range(6)]
    store.set_status(ids[1], "deprecated")
    store.set_status(ids[2], "merged", merged_into=ids[0])
    store.report_use("run-1", "seed", [ids[0], ids[3]])
    store.finish_run("run-1", passed=True)
    store.report_use("run-2", "seed", [ids[3]])
    store.finish_run("run-2", passed=True)
    store.report_use("run-3", "seed", [ids[2]])  # merged lessons do not rank
    store.finish_run("run-3", passed=True)
    stats = lesson_stats(store, top=5)
    assert stats.total == 6
    assert stats.by_status == {"candidate": 4, "validated": 0, "deprecated": 1, "merged": 1}
    assert stats.by_error_type == {
        "runtime_error": {"candidate": 2, "validated": 0, "deprecated": 1, "merged": 1},
        "syntax_error": {"candidate": 2, "validated": 0, "deprecated": 0, "merged": 0},
    }
    assert [x.id for x in stats.most_helpful] == [ids[3], ids[0]]
    assert stats.never_used == 2  # ids 4, 5: the deprecated one does not count
    assert [x.id for x in stats.never_used_oldest] == [ids[4], ids[5]]
    assert lesson_stats(store, top=1).never_used_oldest[0].id == ids[4]


def test_stats_of_an_empty_store(store: Memory) -> None:
    stats = lesson_stats(store)
    assert stats.total == 0 and stats.by_error_type == {} and not stats.most_helpful
    assert stats.by_status == {"candidate": 0, "validated": 0, "deprecated": 0, "merged": 0}
