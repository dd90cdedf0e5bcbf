"""memory.quality: hygiene figures on a small store whose answers can be counted by hand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory import HashEmbedder, LessonDraft, Memory
from memory.quality import quality_report, top_lessons

MONEY = (
    "Amounts carry currency symbols and thousands separators",
    "Strip symbols and separators before float()",
)
BOM = ("The file starts with a UTF-8 byte order mark", "Open it with encoding utf-8-sig")


def draft(scope: str, error_type: str, cause_fix: tuple[str, str]) -> LessonDraft:
    return LessonDraft(
        scope=scope,
        error_type=error_type,
        symptom=f"{error_type} seen",
        root_cause=cause_fix[0],
        fix=cause_fix[1],
    )


@pytest.fixture()
def memory() -> Iterator[Memory]:
    with Memory.in_memory(HashEmbedder()) as store:
        yield store


def test_empty_store_has_no_rates(memory: Memory) -> None:
    q = quality_report(memory)
    assert (q.lessons, q.active, q.runs) == (0, 0, 0)
    assert q.duplicate_rate is None and q.junk_rate is None and q.recall_loop_rate is None
    assert q.lift_share is None and top_lessons(memory) == []


def test_figures_counted_by_hand(memory: Memory) -> None:
    # Dedup-on-write compares lessons of one error type only, so the same root cause filed
    # under two types is stored twice: the report's duplicate figure is what catches it.
    a = memory.add(draft("s", "ValueError", MONEY)).lesson
    b = memory.add(draft("s", "check_failed", MONEY)).lesson
    c = memory.add(draft("s", "KeyError", BOM)).lesson
    d = memory.add(draft("other", "ValueError", MONEY)).lesson  # another scope: no twin
    assert a and b and c and d and len({a.id, b.id, c.id, d.id}) == 4

    memory.record_run("r1", scope="s")
    memory.report_use("r1", "reflection", [a.id])
    memory.finish_run("r1", True, rounds=2)
    memory.record_run("r2", scope="s")
    memory.report_use("r2", "seed", [c.id])
    memory.finish_run("r2", False, rounds=3)
    # r3 is given A and writes A back under another type: a recall loop the guard would
    # have caught had the draft named A as injected.
    memory.record_run("r3", scope="s")
    memory.report_use("r3", "reflection", [a.id])
    e = memory.add(draft("s", "TypeError", MONEY), run_id="r3").lesson
    assert e is not None
    memory.finish_run("r3", True, rounds=2)
    memory.flag_for_review(c.id, "recalled into failing runs")

    q = quality_report(memory)
    assert (q.lessons, q.active, q.runs, q.finished_runs) == (5, 5, 3, 3)
    assert q.duplicate_lessons == 3  # a, b, e in scope s; d is alone in "other"
    assert q.duplicate_rate == pytest.approx(3 / 5)
    assert {(p.a, p.b) for p in q.duplicate_pairs} | {(p.b, p.a) for p in q.duplicate_pairs} >= {
        (a.id, b.id),
        (a.id, e.id),
        (b.id, e.id),
    }
    assert (q.never_recalled, q.flagged, q.junk_lessons) == (3, 1, 4)  # b, d, e + flagged c
    assert q.junk_rate == pytest.approx(4 / 5)
    assert (q.written, q.recall_loops) == (1, 1) and q.recall_loop_rate == 1.0
    # a: 2 passing uses vs the scope's other run (r2 failed) -> positive; c: the opposite
    assert q.with_lift == 2 and q.helpful == 1 and q.lift_share == pytest.approx(2 / 5)

    best = top_lessons(memory, limit=2)
    assert [s.lesson.id for s in best][:1] == [a.id]
    assert best[0].lift is not None and (best[0].lift.lift or 0) > 0


def test_report_reads_without_writing(memory: Memory) -> None:
    memory.add(draft("s", "ValueError", MONEY))
    before = memory.list_lessons().items
    quality_report(memory)
    quality_report(memory)
    assert memory.list_lessons().items == before
