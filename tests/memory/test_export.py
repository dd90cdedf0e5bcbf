"""JSONL export / import (memory/export.py) on real SQLite + embedded chromadb stores.

HashEmbedder keeps these fast: the format does not depend on the embedding model.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import memory.export as export_module
from memory import Evidence, HashEmbedder, Lesson, LessonDraft, LessonQuery, Memory, faults
from memory.export import (
    FORMAT,
    VERSION,
    ImportFormatError,
    LessonRecord,
    export_lessons,
    export_lines,
    export_to_file,
    header_line,
    import_lessons,
)


def open_store(path: Path) -> Memory:
    return Memory.open(str(path), embedder=HashEmbedder())


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Memory]:
    memory = open_store(tmp_path / "source.sqlite3")
    yield memory
    memory.close()


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Memory]:
    memory = open_store(tmp_path / "target.sqlite3")
    yield memory
    memory.close()


def draft(n: int, **fields: object) -> LessonDraft:
    """Lessons whose words do not overlap between different n (no dedup between them)."""
    values: dict[str, object] = {
        "error_type": "runtime_error",
        "symptom": f"alpha{n} bravo{n} failed",
        "root_cause": f"charlie{n} delta{n}",
        "fix": f"echo{n} foxtrot{n}",
        "applies_when": f"golf{n}",
    }
    values.update(fields)
    return LessonDraft.model_validate(values)


def added(memory: Memory, d: LessonDraft, run_id: str | None = None) -> Lesson:
    result = memory.add(d, run_id=run_id)
    assert result.lesson is not None
    return result.lesson


def seed_varied(memory: Memory) -> list[str]:
    """Every feature the format carries: scopes, statuses, merge links, evidence, counters."""
    tricky = 'ValueError: "1,200" [red]x[/] é ∑ 🙂\nsecond line\ttab \\ backslash'
    a = added(
        memory,
        draft(1, symptom=tricky, evidence=(Evidence(run_id="r1", excerpt="line 1\nline 2"),)),
        run_id="run-a",
    )
    added(memory, draft(1), run_id="run-b")  # same root cause + fix: seen=2, evidence merged
    b = added(memory, draft(2, error_type="syntax_error", scope="proj"))
    c = added(memory, draft(3, applies_when=""))
    d = added(memory, draft(4, status="validated"))
    e = added(memory, draft(5))
    memory.set_status(b.id, "deprecated")
    memory.set_status(c.id, "merged", merged_into=a.id)
    memory.update(d.id, fix="hotel4 india4 edited")
    memory.report_use("run-c", "seed", [a.id, d.id])
    memory.finish_run("run-c", passed=True, rounds=2)
    memory.report_use("run-d", "reflection", [d.id])
    memory.finish_run("run-d", passed=False, rounds=3)
    return [a.id, b.id, c.id, d.id, e.id]


def as_file(lines: list[str]) -> list[str]:
    return [line + "\n" for line in lines]


def test_round_trip_is_exact(source: Memory, target: Memory) -> None:
    ids = seed_varied(source)
    first = list(export_lines(source))
    report = import_lessons(target, as_file(first))
    assert report.ok and report.imported == tuple(json.loads(x)["id"] for x in first[1:])
    assert not report.skipped and not report.dangling_links
    assert list(export_lines(target)) == first
    for lesson_id in ids:
        assert target.get(lesson_id) == source.get(lesson_id)
    assert target.check().clean
    query = LessonQuery(text="alpha5 bravo5 failed charlie5 delta5", min_similarity=0.3)
    hits = target.recall(query)
    assert [h.lesson.id for h in hits] == [ids[4]]


def test_export_carries_every_field(source: Memory) -> None:
    ids = seed_varied(source)
    lines = list(export_lines(source))
    assert (
        lines[0]
        == header_line()
        == json.dumps({"format": FORMAT, "version": VERSION}, separators=(",", ":"))
    )
    by_id = {row["id"]: row for row in map(json.loads, lines[1:])}
    assert list(by_id) == ids  # created_at order
    a, merged = by_id[ids[0]], by_id[ids[2]]
    assert a["seen"] == 2 and [e["run_id"] for e in a["evidence"]] == ["r1", "run-a", "run-b"]
    assert a["merged_from"] == [ids[2]] and merged["merged_into"] == ids[0]
    assert merged["status"] == "merged" and by_id[ids[1]]["status"] == "deprecated"
    used = by_id[ids[3]]
    assert (used["recalled"], used["helped"], used["misled"]) == (2, 1, 1)
    assert all(row["created_at"].endswith("Z") for row in by_id.values())


def test_record_mirrors_lesson_and_is_documented() -> None:
    # A field added to Lesson must be a deliberate format decision (and a version bump).
    assert list(LessonRecord.model_fields) == list(Lesson.model_fields)
    doc = export_module.__doc__ or ""
    for name in LessonRecord.model_fields:
        assert name in doc, name


def test_bad_lines_are_reported_and_good_lines_kept(source: Memory, target: Memory) -> None:
    seed_varied(source)
    header, good1, good2, *_ = list(export_lines(source))
    missing_fix = json.loads(good2)
    del missing_fix["fix"]
    bad_status = {**json.loads(good2), "id": "les_bad_status", "status": "retired"}
    half_merged = {**json.loads(good2), "id": "les_half", "status": "merged"}
    extra_key = {**json.loads(good2), "id": "les_extra", "colour": "red"}
    naive_time = {**json.loads(good2), "id": "les_naive", "created_at": "2024-01-01T00:00:00"}
    lines = [
        header,  # 1
        good1,  # 2
        "{not json",  # 3
        json.dumps(missing_fix),  # 4
        "",  # 5: blank lines are ignored
        json.dumps(bad_status),  # 6
        good1,  # 7: repeats line 2
        json.dumps(half_merged),  # 8
        json.dumps(extra_key),  # 9
        json.dumps(naive_time),  # 10
        "[1, 2]",  # 11
        good2,  # 12
    ]
    report = import_lessons(target, as_file(lines))
    assert [e.line for e in report.errors] == [3, 4, 6, 7, 8, 9, 10, 11]
    messages = {e.line: e.message for e in report.errors}
    assert "fix" in messages[4] and "status" in messages[6] and "repeats line 2" in messages[7]
    assert "merged_into" in messages[8] and "colour" in messages[9]
    assert "timezone" in messages[10]
    assert report.imported == (json.loads(good1)["id"], json.loads(good2)["id"])
    assert not report.ok
    assert target.list_lessons().total == 2


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        ('{"format":"lessonloop.lessons","version":2}', "version 2 is not supported"),
        ('{"format":"lessonloop.lessons","version":"1"}', "version '1' is not supported"),
        ('{"format":"other.things","version":1}', "not a lessonloop.lessons header"),
        ("id,scope,symptom", "not a lessonloop.lessons header"),
        ('{"format":"lessonloop.lessons","version":1,"x":1}', "bad header"),
    ],
)
def test_foreign_or_future_files_are_refused_whole(
    source: Memory, target: Memory, first_line: str, expected: str
) -> None:
    seed_varied(source)
    lessons = list(export_lines(source))[1:]
    with pytest.raises(ImportFormatError, match=expected) as caught:
        import_lessons(target, as_file([first_line, *lessons]))
    if "version 2" in expected:
        assert "reads version 1" in str(caught.value)
    assert target.list_lessons().total == 0


def test_a_file_without_header_is_refused(source: Memory, target: Memory) -> None:
    seed_varied(source)
    lessons = list(export_lines(source))[1:]
    with pytest.raises(ImportFormatError, match="header"):
        import_lessons(target, as_file(lessons))
    with pytest.raises(ImportFormatError, match="empty file"):
        import_lessons(target, ["\n", "  \n"])
    assert target.list_lessons().total == 0


def test_existing_ids_are_skipped_or_replaced(source: Memory) -> None:
    ids = seed_varied(source)
    lines = list(export_lines(source))
    again = import_lessons(source, as_file(lines))
    assert again.skipped == tuple(ids) and not again.imported and again.ok
    source.update(ids[4], symptom="zulu99 yankee99 changed")
    kept = import_lessons(source, as_file(lines))
    assert source.get(ids[4]).symptom == "zulu99 yankee99 changed" and len(kept.skipped) == 5
    replaced = import_lessons(source, as_file(lines), replace=True)
    assert replaced.replaced == tuple(ids) and not replaced.skipped
    assert list(export_lines(source)) == lines
    assert source.check().clean
    hits = source.recall(LessonQuery(text="zulu99 yankee99 changed"))
    assert ids[4] not in [h.lesson.id for h in hits]  # the index follows the replaced text


def test_a_replace_that_moves_a_lesson_to_another_scope_moves_its_index_entry(
    source: Memory,
) -> None:
    ids = seed_varied(source)
    lines = list(export_lines(source))
    moved = [lines[0]]
    for line in lines[1:]:
        row = json.loads(line)
        moved.append(json.dumps({**row, "scope": "elsewhere"}))
    report = import_lessons(source, as_file(moved), replace=True)
    assert report.replaced == tuple(ids)
    # One index entry per lesson: none left behind in the old scopes' collections.
    assert faults.index_count(source) == len(ids) and source.check().clean
    assert {x["scope"] for x in faults.index_metadata(source, ids).values()} == {"elsewhere"}
    assert source.recall(LessonQuery(text=draft(5).symptom, scope="default")) == []
    found = source.recall(LessonQuery(text=draft(5).symptom, scope="elsewhere"))
    assert ids[4] in [h.lesson.id for h in found]


def test_scoped_export_and_dangling_links(source: Memory, target: Memory) -> None:
    ids = seed_varied(source)
    proj = list(export_lines(source, scope="proj"))
    assert [json.loads(x)["id"] for x in proj[1:]] == [ids[1]]
    # The merged lesson alone: its link points at a lesson that is in neither place.
    lessons = list(export_lines(source))[1:]
    merged_only = [proj[0], *(x for x in lessons if json.loads(x)["id"] == ids[2])]
    report = import_lessons(target, as_file(merged_only))
    assert report.imported == (ids[2],) and report.dangling_links == (ids[0],)


def test_timestamps_are_normalised_to_utc(source: Memory, target: Memory) -> None:
    seed_varied(source)
    header, line, *_ = list(export_lines(source))
    row = json.loads(line)
    row["created_at"] = "2024-03-01T12:30:00.250000+02:00"
    import_lessons(target, as_file([header, json.dumps(row)]))
    out = json.loads(list(export_lines(target))[1])
    assert out["created_at"] == "2024-03-01T10:30:00.250000Z"


def test_import_redacts_secrets(source: Memory, target: Memory) -> None:
    seed_varied(source)
    header, line, *_ = list(export_lines(source))
    row = json.loads(line)
    row["fix"] = "set OPENAI key sk-abcdefghijklmnopqrstuvwxyz0123 in the env"
    row["evidence"] = [{"run_id": "r9", "excerpt": "password=hunter2"}]
    import_lessons(target, as_file([header, json.dumps(row)]))
    lesson = target.get(row["id"])
    assert "sk-abc" not in lesson.fix and "[REDACTED]" in lesson.fix
    assert lesson.evidence[0].excerpt == "password=[REDACTED]"


def test_export_to_file_and_stream(source: Memory, target: Memory, tmp_path: Path) -> None:
    seed_varied(source)
    path = tmp_path / "lessons.jsonl"
    assert export_to_file(source, path) == 5
    assert not list(tmp_path.glob("*.partial"))
    buffer = io.StringIO()
    assert export_lessons(source, buffer) == 5
    assert path.read_text(encoding="utf-8") == buffer.getvalue()
    ticks: list[int] = []
    with path.open(encoding="utf-8") as lines:
        report = import_lessons(target, lines, progress=ticks.append)
    assert len(report.imported) == 5 and ticks == [1, 2, 3, 4, 5]


def test_large_import_spans_chunks(target: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunking is what lets an interrupted import keep what it wrote; make chunks tiny.
    monkeypatch.setattr(export_module, "_CHUNK", 3)
    rows = []
    for n in range(8):
        rows.append(
            LessonRecord.model_validate(
                {
                    "id": f"les_{n:04d}",
                    "scope": "default",
                    "error_type": "runtime_error",
                    "symptom": f"kilo{n} lima{n}",
                    "root_cause": f"mike{n}",
                    "fix": f"november{n}",
                    "applies_when": "",
                    "evidence": [],
                    "status": "candidate",
                    "seen": 1,
                    "recalled": 0,
                    "helped": 0,
                    "misled": 0,
                    "merged_into": None,
                    "merged_from": [],
                    "created_at": f"2024-01-0{n + 1}T00:00:00Z",
                    "updated_at": f"2024-01-0{n + 1}T00:00:00Z",
                    "embedding_model": "hash-bow-256",
                }
            ).model_dump_json()
        )
    report = import_lessons(target, as_file([header_line(), *rows]))
    assert len(report.imported) == 8
    assert list(export_lines(target))[1:] == rows
    assert target.check().clean
