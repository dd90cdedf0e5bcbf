"""Schema versions: a store written before versions were recorded opens and is upgraded.

`fixtures/store_v1.sql` is a real SQLite store written by lessonloop at schema version 1
(before this change: no recorded version, the merge/vector/lease tables created lazily).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, LessonQuery, Memory, MemoryConfigError, faults
from memory.migrate import SCHEMA_VERSION
from memory.schema import TABLES

FIXTURE = Path(__file__).parent / "fixtures" / "store_v1.sql"
CURRENCY = "les_b0da752471480f54"
BOM = "les_dbe613a88d750ba9"


def v1_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    with sqlite3.connect(store / "memory.sqlite3") as con:
        con.executescript(FIXTURE.read_text())
    return store


def tables(store: Path) -> set[str]:
    with sqlite3.connect(store / "memory.sqlite3") as con:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_the_fixture_is_a_version_1_store(tmp_path: Path) -> None:
    store = v1_store(tmp_path)
    assert "lesson_merges" not in tables(store) and "leases" not in tables(store)
    with sqlite3.connect(store / "memory.sqlite3") as con:
        keys = {r[0] for r in con.execute("SELECT key FROM memory_meta")}
    assert "schema_version" not in keys


def test_a_version_1_store_is_upgraded_and_keeps_everything(tmp_path: Path) -> None:
    store = v1_store(tmp_path)
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        assert memory.schema_version() == SCHEMA_VERSION == 6
        assert tables(store) >= {t.name for t in TABLES}
        currency, bom = memory.get(CURRENCY), memory.get(BOM)
        assert currency.scope == "billing" and currency.evidence[0].run_id == "run-v1"
        assert (bom.status, bom.recalled, bom.helped) == ("validated", 1, 1)
        assert memory.get_run("run-v1").passed is True
        # Version 5's runs.error: old runs read "", a new run can end by an error.
        assert memory.get_run("run-v1").error == ""
        memory.record_run("run-v5")
        assert memory.abort_run("run-v5", "BackendError: boom").error == "BackendError: boom"
        assert [u.outcome for u in memory.uses(BOM)] == ["passed"]
        # The index was not part of the fixture, and a store without a recorded index text
        # version is reindexed on open (memory.matchtext): SQL (the truth) rebuilt it.
        assert memory.check().missing_in_index == ()
        query = LessonQuery(text="float() fails on '$1,299.99'", scope="billing")
        assert [s.lesson.id for s in memory.recall(query)][:1] == [CURRENCY]
        # What version 1 created lazily works at once.
        assert memory.embed_root_causes() == 2 and memory.list_merges() == []
        assert memory.flag_for_review(CURRENCY, "drill") and memory.review_flags()
        assert memory.acquire_lease("consolidation", "me", 60) is not None
        added = memory.add(
            LessonDraft(
                scope="billing", error_type="KeyError", symptom="s", root_cause="r", fix="f"
            )
        )
        assert added.action == "created"
    with Memory.open(str(store), embedder=HashEmbedder()) as again:  # idempotent
        assert again.schema_version() == SCHEMA_VERSION and again.check().clean
        assert len(again.review_flags()) == 1


def test_a_newer_store_is_refused_not_damaged(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        faults.record_schema_version(memory, SCHEMA_VERSION + 1)
    with pytest.raises(MemoryConfigError, match="newer than this lessonloop knows"):
        Memory.open(str(store), embedder=HashEmbedder())
