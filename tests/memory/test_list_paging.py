"""Listing a big store stays an index walk: the paging indexes exist, also on older stores.

Schema version 3 added them (`memory.migrate`): a version 2 store, whose lessons table lacks
them, gets them when it is opened. The store file is inspected and aged with SQLAlchemy on
the SQLite file itself, as tests/memory/test_migrate.py does, never through `Memory`.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, inspect, text

from memory import HashEmbedder, LessonDraft, LessonFilter, Memory
from memory.db import sql_url
from memory.migrate import SCHEMA_VERSION, VERSION_KEY

PAGING = {"ix_lessons_created", "ix_lessons_updated"}


def _indexes(store: Path) -> set[str]:
    engine = create_engine(sql_url(str(store / "memory.sqlite3")))
    try:
        return {ix["name"] for ix in inspect(engine).get_indexes("lessons")}
    finally:
        engine.dispose()


def _make_version_2(store: Path) -> None:
    """What a store written by the previous version looks like: no paging indexes."""
    engine = create_engine(sql_url(str(store / "memory.sqlite3")))
    try:
        with engine.begin() as conn:
            for name in PAGING:
                conn.execute(text(f"DROP INDEX {name}"))
            conn.execute(
                text("UPDATE memory_meta SET value = '2' WHERE key = :key"), {"key": VERSION_KEY}
            )
    finally:
        engine.dispose()


def test_a_new_store_has_the_paging_indexes(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        assert memory.schema_version() == SCHEMA_VERSION == 6
    assert _indexes(store) >= PAGING


def test_a_version_2_store_gets_the_paging_indexes_on_open(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        for i in range(3):
            memory.add(
                LessonDraft(
                    error_type="E", symptom=f"s{i}", root_cause=f"cause {i} x{i}", fix=f"fix {i}"
                )
            )
    _make_version_2(store)
    assert not PAGING & _indexes(store)
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        assert memory.schema_version() == SCHEMA_VERSION
        assert _indexes(store) >= PAGING
        page = memory.list_lessons(LessonFilter(limit=2, offset=1, descending=False))
        assert page.total == 3 and [x.symptom for x in page.items] == ["s1", "s2"]
        assert memory.check().clean
    with Memory.open(str(store), embedder=HashEmbedder()) as again:  # idempotent
        assert again.schema_version() == SCHEMA_VERSION and _indexes(store) >= PAGING
