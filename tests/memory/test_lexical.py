"""The lexical side of recall: BM25 postings and their freshness against SQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, Memory
from memory.lexical import BM25


def test_bm25_removal_equals_a_fresh_index() -> None:
    docs = {"a": "could not convert string to float", "b": "utf-8 byte order mark", "c": "float"}
    grown = BM25()
    for doc_id, text in docs.items():
        grown.put(doc_id, text)
    grown.put("d", "float string mark extra words")
    grown.remove("d")
    grown.put("b", "utf-8 byte order mark")  # replacing keeps one copy
    fresh = BM25()
    for doc_id, text in docs.items():
        fresh.put(doc_id, text)
    query = "ValueError: could not convert string to float: 'x' mark"
    assert grown.scores(query) == pytest.approx(fresh.scores(query))
    assert set(fresh.scores(query)) == {"a", "b", "c"} and len(grown) == 3
    assert fresh.top(query, 1)[0][0] == "a"


def lesson(word: str) -> LessonDraft:
    return LessonDraft(
        error_type="runtime_error", symptom=f"{word} failed", root_cause=f"{word} cause", fix=word
    )


def test_postings_follow_sql_across_writers(tmp_path: Path) -> None:
    path = str(tmp_path / "store.sqlite3")
    with Memory.open(path, embedder=HashEmbedder()) as reader:
        assert reader.lexical.scores("zulu yankee", ["default"]) == {}
        with Memory.open(path, embedder=HashEmbedder()) as writer:  # another process, in effect
            zulu = writer.add(lesson("zulu")).lesson
            assert zulu is not None
            assert set(reader.lexical.scores("zulu yankee", ["default"])) == {zulu.id}
            yankee = writer.add(lesson("yankee")).lesson
            assert yankee is not None
            assert set(reader.lexical.scores("zulu yankee", ["default"])) == {zulu.id, yankee.id}
            writer.set_status(zulu.id, "deprecated")
            assert set(reader.lexical.scores("zulu yankee", ["default"])) == {yankee.id}
            writer.update(yankee.id, symptom="xray failed", root_cause="xray cause")
            assert reader.lexical.scores("zulu yankee", ["default"]) == {}
            assert set(reader.lexical.scores("xray", ["default"])) == {yankee.id}
            writer.update(yankee.id, scope="elsewhere")
            assert reader.lexical.scores("xray", ["default"]) == {}
            assert set(reader.lexical.scores("xray", ["default", "elsewhere"])) == {yankee.id}
