"""A store indexed from another index text is reindexed when it is opened (memory.matchtext).

The store files are real (SQLite + embedded chroma). The "old" store is written the way
lessonloop wrote it before the index text changed: vectors of symptom + root cause as
written, and no `index_text_version` in the meta table. The index keeps no documents, so
which text an entry was embedded from is read off its vector.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, LessonQuery, Memory
from memory.dedup import index_text
from memory.index import LessonIndex, embedded_client
from memory.matchtext import INDEX_TEXT_VERSION
from memory.wiring import INDEX_TEXT_KEY, close_client

EMBEDDER = HashEmbedder()
DRAFTS = [
    LessonDraft(
        scope="billing",
        error_type="ValueError",
        symptom="runtime error ValueError at solution.py:8: ValueError: could not convert "
        "string to float: '$860.45' (in the input: values of column 'amount': '$4,332.59')",
        root_cause="amounts carry a currency sign and thousands separators",
        fix="strip '$' and ',' before float()",
    ),
    LessonDraft(
        scope="stock",
        error_type="KeyError",
        symptom="runtime error KeyError at solution.py:5: KeyError: 'sku'",
        root_cause="the header starts with a byte order mark",
        fix="open with encoding='utf-8-sig'",
    ),
]


def old_text(symptom: str, root_cause: str) -> str:
    """Index text version 1: what lessonloop embedded before memory.matchtext."""
    return f"{symptom}\n{root_cause}"


def meta(store: Path) -> dict[str, str]:
    with sqlite3.connect(store / "memory.sqlite3") as con:
        return dict(con.execute("SELECT key, value FROM memory_meta").fetchall())


def dedup_vectors(store: Path) -> dict[str, bytes]:
    with sqlite3.connect(store / "memory.sqlite3") as con:
        return dict(con.execute("SELECT id, dedup_vector FROM lessons").fetchall())


@contextmanager
def chroma(store: Path) -> Iterator[LessonIndex]:
    client = embedded_client(store / "chroma")
    try:
        yield LessonIndex(client, "lessons", model_id=EMBEDDER.model_id, dim=EMBEDDER.dim)
    finally:
        close_client(client)


def embedded_from(store: Path, candidates: dict[str, str]) -> dict[str, bool]:
    """For every index entry: whether its vector is the embedding of `candidates[id]`."""
    with chroma(store) as index:
        ids = [lesson_id for lesson_id, _ in index.entries()]
        scopes = sorted({meta["scope"] for _, meta in index.entries()})
        stored = index.vectors(ids, scopes=scopes)
    assert sorted(stored) == sorted(candidates)
    expected = dict(zip(ids, EMBEDDER.embed([candidates[i] for i in ids]), strict=True))
    return {i: stored[i] == pytest.approx(expected[i], abs=1e-6) for i in sorted(candidates)}


def rewrite_index(store: Path, text: dict[str, str]) -> None:
    """Overwrite the index entries' vectors as an older lessonloop wrote them."""
    with chroma(store) as index:
        entries = dict(index.entries())
        ids = sorted(text)
        index.upsert(ids, EMBEDDER.embed([text[i] for i in ids]), [entries[i] for i in ids])


def set_version(store: Path, version: int | None) -> None:
    with sqlite3.connect(store / "memory.sqlite3") as con:
        con.execute("DELETE FROM memory_meta WHERE key = ?", (INDEX_TEXT_KEY,))
        if version is not None:
            con.execute(
                "INSERT INTO memory_meta (key, value) VALUES (?, ?)", (INDEX_TEXT_KEY, str(version))
            )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with Memory.open(str(path), embedder=EMBEDDER) as memory:
        memory.add_many(DRAFTS)
    return path


def test_a_new_store_records_the_index_text_version(store: Path) -> None:
    assert meta(store)[INDEX_TEXT_KEY] == str(INDEX_TEXT_VERSION)
    with Memory.open(str(store), embedder=EMBEDDER) as memory:
        lessons = memory.list_lessons().items
    new = {lesson.id: index_text(lesson.symptom, lesson.root_cause) for lesson in lessons}
    assert all(embedded_from(store, new).values())


@pytest.mark.parametrize("version", [None, 1, INDEX_TEXT_VERSION + 1])
def test_a_store_indexed_from_another_text_is_reindexed_on_open(
    store: Path, version: int | None
) -> None:
    with Memory.open(str(store), embedder=EMBEDDER) as memory:
        lessons = {lesson.id: lesson for lesson in memory.list_lessons().items}
    old = {i: old_text(lesson.symptom, lesson.root_cause) for i, lesson in lessons.items()}
    rewrite_index(store, old)
    set_version(store, version)
    assert all(embedded_from(store, old).values())
    assert meta(store).get(INDEX_TEXT_KEY) == (None if version is None else str(version))
    dedup_before = dedup_vectors(store)

    with Memory.open(str(store), embedder=EMBEDDER) as memory:
        assert meta(store)[INDEX_TEXT_KEY] == str(INDEX_TEXT_VERSION)
        assert memory.check().missing_in_index == ()
        currency = next(i for i, lesson in lessons.items() if lesson.scope == "billing")
        query = "kind: runtime_error (ValueError)\nmessage: could not convert '$12.50'"
        hit = memory.recall(LessonQuery(text=query, scope="billing", min_similarity=0.0))[0]
        expected = EMBEDDER.embed(
            [
                "could not convert '$12.50'",
                index_text(lessons[currency].symptom, lessons[currency].root_cause),
            ]
        )
        assert hit.lesson.id == currency
        assert hit.similarity == pytest.approx(
            sum(a * b for a, b in zip(*expected, strict=True)), abs=1e-5
        )
    new = {i: index_text(lesson.symptom, lesson.root_cause) for i, lesson in lessons.items()}
    assert all(embedded_from(store, new).values())
    assert not any(embedded_from(store, old).values())
    # Only the index was rebuilt: the dedup vectors (root cause + fix) did not change.
    assert dedup_vectors(store) == dedup_before


def test_a_store_at_this_version_is_not_reindexed(store: Path) -> None:
    with Memory.open(str(store), embedder=EMBEDDER) as memory:
        ids = sorted(lesson.id for lesson in memory.list_lessons().items)
    sentinel = {i: f"sentinel {n}" for n, i in enumerate(ids)}
    rewrite_index(store, sentinel)
    with Memory.open(str(store), embedder=EMBEDDER):
        pass
    assert all(embedded_from(store, sentinel).values())


def test_an_empty_store_of_an_older_version_just_records_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    with Memory.open(str(path), embedder=EMBEDDER):
        pass
    set_version(path, 1)
    with Memory.open(str(path), embedder=EMBEDDER):
        pass
    assert meta(path)[INDEX_TEXT_KEY] == str(INDEX_TEXT_VERSION)
