"""Listing a big store stays an index walk: the paging indexes exist, also on older stores."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, text

from memory import HashEmbedder, LessonDraft, LessonFilter, Memory

PAGING = {"ix_lessons_created", "ix_lessons_updated"}


def _indexes(memory: Memory) -> set[str]:
    return {ix["name"] for ix in inspect(memory.db.engine).get_indexes("lessons")}


def test_a_store_made_before_the_paging_indexes_gets_them_on_open(tmp_path: Path) -> None:
    with Memory.open(str(tmp_path / "s"), embedder=HashEmbedder()) as memory:
        assert _indexes(memory) >= PAGING
        for i in range(3):
            memory.add(
                LessonDraft(
                    error_type="E", symptom=f"s{i}", root_cause=f"cause {i} x{i}", fix=f"fix {i}"
                )
            )
        with memory.db.engine.begin() as conn:  # what a store of the previous version had
            for name in PAGING:
                conn.execute(text(f"DROP INDEX {name}"))
        assert not PAGING & _indexes(memory)
    with Memory.open(str(tmp_path / "s"), embedder=HashEmbedder()) as memory:
        assert _indexes(memory) >= PAGING
        page = memory.list_lessons(LessonFilter(limit=2, offset=1, descending=False))
        assert page.total == 3 and [x.symptom for x in page.items] == ["s1", "s2"]
