"""Caches built from SQL stay true to it: the dedup pool and the BM25 postings.

Two `Memory` objects on one store stand for two processes: each keeps its own caches, warmed
first, and must see what the other wrote (inserts, status changes, scope moves, merges and
their undo, which restores older timestamps). The trigger-kept counters (`memory.counts`)
are compared with the lessons themselves. Every test runs on SQLite + embedded chromadb and on
PostgreSQL + a Chroma server.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from memory_servers import StoreSpec
from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.exc import SQLAlchemyError
from test_memory_merges import draft, plan

from memory import HashEmbedder, LessonDraft, LessonFilter, Memory, counts, faults, queries
from memory.db import Database, sql_url
from memory.export import export_lessons, import_lessons
from memory.migrate import SCHEMA_VERSION, VERSION_KEY
from memory.wiring import locations

NEW_INDEXES = {
    "ix_lessons_scope_updated",
    "ix_lessons_scope_type_updated",
    "ix_lessons_merged_into",
}


@pytest.fixture
def pair(spec: StoreSpec) -> Iterator[tuple[Memory, Memory]]:
    a = spec.open()
    b = spec.open()
    yield a, b
    b.close()
    a.close()


def _warm(memory: Memory) -> None:
    # Fill both caches of this instance: a dedup pool (an add) and the postings (a search).
    memory.add(draft(500))
    memory.bm25_scores("alpha500", ["default"])


@contextmanager
def _statements(memory: Memory) -> Iterator[list[tuple[str, object]]]:
    """The SQL statements (and their parameters) `memory` runs inside the block."""
    ran: list[tuple[str, object]] = []

    def keep(conn: object, cursor: object, sql: str, params: object, *_: object) -> None:
        ran.append((sql, params))

    engine = memory._db.engine
    event.listen(engine, "before_cursor_execute", keep)
    try:
        yield ran
    finally:
        event.remove(engine, "before_cursor_execute", keep)


def _moved(d: LessonDraft, scope: str) -> LessonDraft:
    return d.model_copy(update={"scope": scope})


def test_a_lesson_written_elsewhere_is_a_duplicate_here(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    _warm(a)
    _warm(b)
    first = a.add(draft(1)).lesson
    assert first is not None
    again = b.add(draft(1))
    assert again.action == "merged_duplicate" and again.lesson is not None
    assert again.lesson.id == first.id and a.get(first.id).seen == 2
    assert first.id in b.bm25_scores("alpha1", ["default"])


def test_a_deprecated_lesson_leaves_the_postings(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    lesson = a.add(draft(2)).lesson
    assert lesson is not None
    assert lesson.id in b.bm25_scores("alpha2", ["default"])
    a.set_status(lesson.id, "deprecated")
    assert lesson.id not in b.bm25_scores("alpha2", ["default"])
    # Deprecated lessons still take duplicates in (dedup compares with all but merged ones).
    assert b.add(draft(2)).action == "merged_duplicate"


def test_a_lesson_moved_to_another_scope_moves_in_every_cache(
    pair: tuple[Memory, Memory],
) -> None:
    a, b = pair
    _warm(b)
    lesson = a.add(draft(3)).lesson
    assert lesson is not None
    assert b.add(draft(4)).action == "created"  # b's pool of "default" now holds lesson 3
    a.update(lesson.id, scope="elsewhere")
    assert lesson.id not in b.bm25_scores("alpha3", ["default"])
    assert lesson.id in b.bm25_scores("alpha3", ["elsewhere"])
    assert b.add(draft(3)).action == "created"  # no longer in "default"
    folded = b.add(_moved(draft(3), "elsewhere"))
    assert folded.action == "merged_duplicate" and folded.lesson is not None
    assert folded.lesson.id == lesson.id


def test_merge_and_undo_elsewhere_are_seen_by_dedup(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    _warm(b)
    one, two = (a.add(draft(n)).lesson for n in (5, 6))
    assert one is not None and two is not None
    assert b.add(draft(7)).action == "created"  # b's pool holds 5 and 6
    record = a.apply_merge(plan([one, two]))
    assert record is not None
    # The members are merged: a draft repeating one folds into nothing merged.
    repeat = b.add(draft(5))
    assert repeat.lesson is not None and repeat.lesson.status != "merged"
    assert repeat.lesson.id != one.id
    a.undo_merge(record.id)  # the members come back with their old timestamps
    back = b.add(draft(6))
    assert back.action == "merged_duplicate" and back.lesson is not None
    assert back.lesson.id == two.id


def test_a_bulk_write_puts_its_rows_in_its_pool_without_reading_them(
    pair: tuple[Memory, Memory],
) -> None:
    a, _ = pair
    _warm(a)
    a.add_many([draft(n) for n in range(20, 30)])
    with _statements(a) as ran:
        repeat = a.add_many([draft(n) for n in range(20, 30)])
    assert [r.action for r in repeat] == ["merged_duplicate"] * 10
    # The pool's reads (dedup vectors of one scope and error type, not rows by id): none,
    # the pool already held them.
    assert not [s for s, _ in ran if "dedup_vector" in s and "lessons.error_type = " in s]


def test_a_rolled_back_bulk_write_leaves_nothing_in_the_pool(
    pair: tuple[Memory, Memory],
) -> None:
    a, b = pair
    _warm(a)
    a.record_run("run-fault")
    with faults.failing_run_updates(a), pytest.raises(SQLAlchemyError):
        a.add_many([draft(10), draft(11)], run_id="run-fault")
    assert a.list_lessons().total == 1  # the warm-up lesson: the insert rolled back
    # Another writer moves the counters by as many lessons as the rolled back write had:
    # a pool that took the rolled back rows in would now look current and hold them.
    assert [r.action for r in b.add_many([draft(12), draft(13)])] == ["created", "created"]
    assert [r.action for r in a.add_many([draft(10), draft(11)])] == ["created", "created"]
    folded = a.add(draft(12))
    assert folded.action == "merged_duplicate" and folded.lesson is not None


def test_the_counters_match_the_lessons(spec: StoreSpec, pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    lessons = [a.add(draft(n)).lesson for n in range(10, 16)]
    b.add(draft(10))  # a sighting: no counter moves but the generation
    b.add(_moved(draft(40), "other"))
    assert all(x is not None for x in lessons)
    ids = [x.id for x in lessons if x is not None]
    a.set_status(ids[0], "deprecated")
    a.set_status(ids[1], "validated")
    a.update(ids[2], scope="other", error_type="KeyError")
    record = a.apply_merge(plan([a.get(ids[3]), a.get(ids[4])]))
    assert record is not None
    everything = a.list_lessons(LessonFilter(limit=1000)).items
    recallable = Counter(
        (x.scope, x.error_type) for x in everything if x.status in ("candidate", "validated")
    )
    unmerged = Counter((x.scope, x.error_type) for x in everything if x.status != "merged")
    db = Database.connect(locations(spec.url, None)[0] if spec.kind == "sqlite" else spec.url)
    try:
        with db.read() as session:
            for scope, error_type in set(recallable) | set(unmerged):
                got = counts.read(session, scope, [error_type])
                assert got.recallable == recallable[(scope, error_type)], (scope, error_type)
                assert got.unmerged == unmerged[(scope, error_type)], (scope, error_type)
                assert got.generation > 0
            assert counts.read(session, "nowhere").generation == 0
    finally:
        db.dispose()


def _recallable(memory: Memory, *types: str) -> set[str]:
    # What recall's searches among the recallable lessons name to the vector index.
    found = memory._lexical.recallable(["default", "elsewhere"], types)
    return {i for ids in found.values() for i in ids}


def test_the_recallable_lessons_by_type_follow_another_writer(
    pair: tuple[Memory, Memory],
) -> None:
    a, b = pair
    _warm(b)
    warm = b.list_lessons().items[0].id
    value, key = (
        a.add(draft(n, error_type=t)).lesson for n, t in ((8, "ValueError"), (9, "KeyError"))
    )
    assert value is not None and key is not None
    assert _recallable(b, "ValueError") == {warm, value.id}
    assert _recallable(b, "KeyError") == {key.id}
    assert _recallable(b) == {warm, value.id, key.id}
    a.update(value.id, error_type="KeyError")  # an edit of the type alone
    assert _recallable(b, "ValueError") == {warm}
    assert _recallable(b, "KeyError", "ValueError") == {warm, value.id, key.id}
    a.set_status(key.id, "deprecated")
    assert _recallable(b, "KeyError") == {value.id}
    a.update(value.id, scope="elsewhere")
    assert b._lexical.recallable(["elsewhere"], ["KeyError"]) == {"elsewhere": [value.id]}
    assert _recallable(b, "KeyError") == {value.id}
    # A merge: the members leave, the canonical is recallable under its own type.
    record = a.apply_merge(plan([a.get(warm), a.add(draft(10)).lesson]))
    assert record is not None
    assert _recallable(b, "ValueError") == {record.canonical_id}
    a.undo_merge(record.id)  # the members come back with their old timestamps
    assert warm in _recallable(b, "ValueError") and record.canonical_id not in _recallable(b)


def test_only_the_error_types_that_moved_are_read_again(pair: tuple[Memory, Memory]) -> None:
    # At 100k lessons in one scope a read of every recallable lesson cost 230 ms; a write
    # moves the counters of its own (scope, error type) only.
    a, b = pair
    for n, error_type in ((50, "ValueError"), (51, "KeyError"), (52, "IndexError")):
        a.add(draft(n, error_type=error_type))
    assert len(_recallable(b)) == 3  # b has read every type
    added = a.add(draft(53, error_type="KeyError")).lesson
    assert added is not None
    with _statements(b) as ran:
        assert added.id in _recallable(b) and len(_recallable(b)) == 4
        assert len(_recallable(b, "ValueError", "KeyError")) == 3
    # One read of the lessons, for the type that moved, in each scope that has lessons.
    [params] = [p for sql, p in ran if "FROM lessons" in sql]
    values = list(params.values()) if isinstance(params, dict) else list(params)
    assert "KeyError" in values and "ValueError" not in values and "IndexError" not in values


def test_the_recallable_lessons_follow_writes_that_restore_older_timestamps(
    pair: tuple[Memory, Memory],
) -> None:
    # An undo puts the members back with their old `updated_at`, and a re-import restores an
    # older export's type under the export's timestamp: a refresh by "rows updated since"
    # misses both when the scope's count comes out even. These searches must not miss a
    # lesson: recall re-checks only the ids they name.
    a, b = pair
    one, two, other = (a.add(draft(n)).lesson for n in (40, 41, 42))
    assert one is not None and two is not None and other is not None
    record = a.apply_merge(plan([one, two]))
    assert record is not None
    assert _recallable(b, "ValueError") == {record.canonical_id, other.id}
    a.undo_merge(record.id)
    a.update(other.id, scope="elsewhere")  # the count of "default" is back where it was
    assert b._lexical.recallable(["default"], ["ValueError"]) == {"default": [one.id, two.id]}
    exported = io.StringIO()
    export_lessons(a, exported)  # `one` as a ValueError
    a.update(one.id, error_type="KeyError")
    assert _recallable(b, "KeyError") == {one.id}
    report = import_lessons(a, exported.getvalue().splitlines(), replace=True)
    assert one.id in report.replaced
    assert _recallable(b, "ValueError") == {one.id, two.id, other.id}
    assert _recallable(b, "KeyError") == set()


def test_a_version_3_store_gets_counters_and_triggers_on_open(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        for n in range(20, 24):
            memory.add(draft(n))
        first = memory.list_lessons().items[0]
        memory.set_status(first.id, "deprecated")
    # What version 3 wrote: no counters table, no triggers, none of the new indexes.
    engine = create_engine(sql_url(str(store / "memory.sqlite3")))
    try:
        with engine.begin() as conn:
            for trigger in ("insert", "delete", "update"):
                conn.execute(text(f"DROP TRIGGER lessons_count_{trigger}"))
            conn.execute(text("DROP TABLE lesson_counts"))
            for index in NEW_INDEXES:
                conn.execute(text(f"DROP INDEX {index}"))
            conn.execute(
                text("UPDATE memory_meta SET value = '3' WHERE key = :k"), {"k": VERSION_KEY}
            )
    finally:
        engine.dispose()
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        assert memory.schema_version() == SCHEMA_VERSION == 6
        db = Database.connect(sql_url(str(store / "memory.sqlite3")))
        try:
            with db.read() as session:
                assert counts.read(session, "default") == counts.Counts(
                    generation=1, recallable=3, unmerged=4
                )
            memory.add(draft(24))  # the triggers count again
            with db.read() as session:
                got = counts.read(session, "default")
                assert (got.generation, got.recallable, got.unmerged) == (2, 4, 5)
        finally:
            db.dispose()
    engine = create_engine(sql_url(str(store / "memory.sqlite3")))
    try:
        assert {ix["name"] for ix in inspect(engine).get_indexes("lessons")} >= NEW_INDEXES
    finally:
        engine.dispose()


def test_a_version_5_store_gets_the_merged_members_index_and_the_typed_search_uses_it(
    tmp_path: Path,
) -> None:
    # Recall's typed search asks which canonicals lessons of some types were merged into.
    # Without the index on (scope, error_type, merged_into) SQLite read a table row for every
    # lesson of the scope and type: 160 ms at 100k lessons, in a recall.
    store = tmp_path / "s"
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        one, two = (memory.add(draft(n)).lesson for n in (30, 31))
        assert one is not None and two is not None
        memory.add(draft(32, error_type="KeyError"))
        record = memory.apply_merge(plan([one, two]))
        assert record is not None
    engine = create_engine(sql_url(str(store / "memory.sqlite3")))
    try:
        with engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_lessons_scope_type_merged"))
            conn.execute(
                text("UPDATE memory_meta SET value = '5' WHERE key = :k"), {"k": VERSION_KEY}
            )
    finally:
        engine.dispose()
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        assert memory.schema_version() == SCHEMA_VERSION
        with _statements(memory) as ran:
            found = queries.canonicals_of(memory._db, ["default"], ["ValueError"])
        assert found == {"default": [record.canonical_id]}
        assert queries.canonicals_of(memory._db, ["default"], ["KeyError"]) == {}
        [(sql, params)] = [(s, p) for s, p in ran if "merged_into" in s]
        with memory._db.engine.connect() as conn:
            plan_rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params).all()
        members = [row[-1] for row in plan_rows if "merged_into>?" in row[-1]]
        assert members and all("COVERING INDEX ix_lessons_scope_type_merged" in m for m in members)
