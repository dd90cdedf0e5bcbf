"""`lessonloop lessons ...` and `lessonloop memory ...` end to end, through typer's runner.

Real components: SQLite + embedded chromadb in tmp_path, opened by the CLI itself with the
real MiniLM embedder (agent.app.session.open_memory). MiniLM is loaded again by every command
that embeds (import, search, edit, repair), so the seeded store is built once per module
and copied for the tests that change it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
import typer
from typer.testing import CliRunner, Result

from agent.app.cli_lessons import StatusChoice, lessons_app
from agent.app.cli_memory import memory_app
from memory import Memory, MiniLMEmbedder, faults
from memory.export import header_line
from memory.types import LessonStatus

CURRENCY, BOM, TZ, SYNTAX, DECIMAL, OLD, DUP = (f"les_{n:016x}" for n in range(1, 8))

LESSONS = [
    # id, status, error type, scope, symptom, root cause, fix, (recalled, helped, misled)
    (CURRENCY, "validated", "runtime_error", "default",
     "ValueError: could not convert string to float: '$1,200'",
     "Prices carry a currency symbol and a thousands separator",
     "Strip the currency symbol and ',' before float()", (5, 4, 1)),
    (BOM, "candidate", "runtime_error", "default",
     "KeyError: '\\ufeffid' reading the first CSV column [BOM]",
     "The CSV starts with a UTF-8 byte order mark",
     "Open the file with encoding='utf-8-sig'", (2, 1, 0)),
    (TZ, "candidate", "check_failed", "default",
     "report dates are off by one hour",
     "Timestamps carry time zones; naive comparison shifts them",
     "Parse with the zone and convert to UTC", (0, 0, 0)),
    (SYNTAX, "candidate", "syntax_error", "proj",
     "SyntaxError: unexpected EOF while parsing",
     "An unclosed bracket in the generated code",
     "Balance every bracket before returning code", (0, 0, 0)),
    (DECIMAL, "candidate", "runtime_error", "default",
     "ValueError: could not convert string to float: '3,14'",
     "European numbers use a decimal comma",
     "Replace the decimal comma with a point before float()", (1, 0, 1)),
    (OLD, "deprecated", "runtime_error", "default",
     "ValueError: could not convert string to float: 'N/A'",
     "Missing values are written as N/A",
     "Treat N/A as missing", (0, 0, 0)),
    (DUP, "merged", "runtime_error", "default",
     "float('$5') fails on a price column",
     "Currency signs in price strings",
     "Remove '$' first", (1, 1, 0)),
]  # fmt: skip


def seed_lines() -> list[str]:
    rows = []
    for day, (lesson_id, status, error_type, scope, symptom, cause, fix, counts) in enumerate(
        LESSONS, start=1
    ):
        recalled, helped, misled = counts
        rows.append(
            {
                "id": lesson_id,
                "scope": scope,
                "error_type": error_type,
                "symptom": symptom,
                "root_cause": cause,
                "fix": fix,
                "applies_when": "reading CSV exports",
                "evidence": [{"run_id": f"run-{day}", "excerpt": "Traceback [x] ... line 3"}],
                "status": status,
                "seen": 1,
                "recalled": recalled,
                "helped": helped,
                "misled": misled,
                "merged_into": CURRENCY if status == "merged" else None,
                "merged_from": [DUP] if lesson_id == CURRENCY else [],
                "created_at": f"2024-05-0{day}T09:00:00Z",
                "updated_at": f"2024-05-0{day}T09:00:00Z",
                "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
            }
        )
    # The export's own spelling: compact separators, UTF-8 as is.
    return [
        header_line(),
        *(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows),
    ]


def root_app() -> typer.Typer:
    """The root command, mounted exactly as agent/app/cli.py mounts the sub-apps."""
    app = typer.Typer(no_args_is_help=True, add_completion=False)

    @app.callback()
    def _root() -> None:
        """lessonloop"""

    app.add_typer(lessons_app, name="lessons")
    app.add_typer(memory_app, name="memory")
    return app


APP = root_app()
RUNNER = CliRunner()


def cli(store: Path, *args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    """`lessonloop GROUP --memory STORE COMMAND ...`, asserting the exit code."""
    group, *rest = args
    argv = [group, *rest] if env else [group, "--memory", str(store), *rest]
    result = RUNNER.invoke(APP, argv, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == code, (argv, result.stdout, result.stderr)
    return result


def as_json(store: Path, *args: str, code: int = 0) -> object:
    return json.loads(cli(store, *args, "--json", code=code).stdout)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seeded")
    seed = root / "seed.jsonl"
    seed.write_text("\n".join(seed_lines()) + "\n", encoding="utf-8")
    store = root / "store"
    report = as_json(store, "lessons", "import", str(seed))
    assert report == {
        "imported": [row[0] for row in LESSONS],
        "replaced": [],
        "skipped": [],
        "errors": [],
        "dangling_links": [],
    }
    return store


@pytest.fixture
def store(seeded: Path, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the seeded store (SQLite file + chroma dir) for tests that write."""
    copy = tmp_path / "store"
    shutil.copytree(seeded, copy)
    yield copy


def test_status_choices_match_the_domain_type() -> None:
    assert tuple(StatusChoice) == get_args(LessonStatus)


def test_list_pages_with_the_total(seeded: Path) -> None:
    first = cli(seeded, "lessons", "list", "--limit", "3", "--asc").stdout
    assert "showing 1-3 of 7; next: --offset 3" in first
    assert first.index(CURRENCY) < first.index(BOM) < first.index(TZ)
    last = cli(seeded, "lessons", "list", "--limit", "3", "--asc", "--offset", "6").stdout
    assert "showing 7-7 of 7" in last and "next" not in last and DUP in last
    assert "past the end: 7 lessons" in cli(seeded, "lessons", "list", "--offset", "50").stdout
    page = as_json(
        seeded, "lessons", "list", "--status", "candidate", "--status", "validated",
        "--error-type", "runtime_error", "--sort", "helped", "--limit", "2",
    )  # fmt: skip
    assert isinstance(page, dict)
    assert (page["total"], page["offset"], page["limit"], page["next_offset"]) == (3, 0, 2, 2)
    assert [x["id"] for x in page["items"]] == [CURRENCY, BOM]
    scoped = as_json(seeded, "lessons", "list", "--scope", "proj")
    assert isinstance(scoped, dict) and [x["id"] for x in scoped["items"]] == [SYNTAX]
    env = {"LESSONLOOP_MEMORY": str(seeded)}
    assert "of 7" in cli(seeded, "lessons", "list", env=env).stdout


def test_show_the_full_record(seeded: Path) -> None:
    text = cli(seeded, "lessons", "show", CURRENCY).stdout
    for expected in ("validated", "merged from", DUP, "thousands separator", "run-1"):
        assert expected in text
    assert "Traceback [x] ... line 3" in text  # brackets printed, not read as rich markup
    data = as_json(seeded, "lessons", "show", DUP)
    assert isinstance(data, dict)
    assert data["lesson"]["merged_into"] == CURRENCY and data["uses"] == []
    assert set(data) == {"lesson", "uses", "lift"}
    missing = cli(seeded, "lessons", "show", "les_nope", code=1)
    assert "no lesson 'les_nope'" in missing.stderr


def test_search_by_meaning(seeded: Path) -> None:
    hits = as_json(seeded, "lessons", "search", "could not convert '€5' to float", "--limit", "5")
    assert isinstance(hits, list) and hits
    ids = [h["lesson"]["id"] for h in hits]
    assert ids[0] in (CURRENCY, DECIMAL) and OLD not in ids and DUP not in ids
    sims = [h["similarity"] for h in hits]
    assert all(0.4 <= s <= 1.0 for s in sims)
    text = cli(
        seeded,
        "lessons",
        "search",
        "KeyError on the first column: the CSV starts with a byte order mark",
    ).stdout
    assert BOM in text and "1. 0." in text
    none = cli(seeded, "lessons", "search", "the moon is made of cheese", "--scope", "proj")
    assert "no lesson in scope 'proj'" in none.stdout
    # The empty answer names the gates recall applied, and how to see past them.
    moon = " ".join(cli(seeded, "lessons", "search", "the moon is made of cheese").stdout.split())
    assert "passed recall's gates (the best must reach similarity 0." in moon
    assert "--min-similarity 0 lifts them" in moon
    stated = cli(seeded, "lessons", "search", "the moon is made of cheese\nKeyError: 'moon'")
    assert "states KeyError, runtime_error: a lesson of one of those types must" in " ".join(
        stated.stdout.split()
    )
    nearest = as_json(seeded, "lessons", "search", "the moon is made of cheese",
                      "--min-similarity", "0")  # fmt: skip
    assert isinstance(nearest, list) and nearest
    cut = cli(seeded, "lessons", "search", "the moon", "--min-similarity", "0.99").stdout
    assert "no lesson in scope 'default' has similarity >= 0.99" in cut
    typed = cli(seeded, "lessons", "search", "the moon", "--error-type", "NoSuchError").stdout
    assert "no lesson of type NoSuchError in scope 'default' passed" in " ".join(typed.split())


def test_search_error_type_is_a_filter(seeded: Path) -> None:
    # Close to TZ (check_failed) and to DECIMAL (runtime_error): unfiltered, both show.
    query = "report dates are off by one hour; could not convert string to float: '3,14'"
    both = [h["lesson"]["id"] for h in as_json(seeded, "lessons", "search", query)]
    assert {TZ, DECIMAL} <= set(both), both
    only = as_json(seeded, "lessons", "search", query, "--error-type", "check_failed")
    assert only and {h["lesson"]["error_type"] for h in only} == {"check_failed"}
    runtime = as_json(seeded, "lessons", "search", query, "--error-type", "runtime_error")
    assert DECIMAL in [h["lesson"]["id"] for h in runtime]
    assert {h["lesson"]["error_type"] for h in runtime} == {"runtime_error"}


def test_stats(seeded: Path) -> None:
    stats = as_json(seeded, "lessons", "stats", "--top", "2")
    assert isinstance(stats, dict)
    assert stats["by_status"] == {"candidate": 4, "validated": 1, "deprecated": 1, "merged": 1}
    assert stats["by_error_type"]["runtime_error"]["candidate"] == 2
    assert [x["id"] for x in stats["most_helpful"]] == [CURRENCY, BOM]
    assert stats["never_used"] == 2
    assert [x["id"] for x in stats["never_used_oldest"]] == [TZ, SYNTAX]
    assert "most helpful" in cli(seeded, "lessons", "stats").stdout


def test_export_import_round_trip(seeded: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    info = as_json(seeded, "lessons", "export", "--out", str(first))
    assert info == {
        "path": str(first), "lessons": 7, "format": "lessonloop.lessons", "version": 1
    }  # fmt: skip
    assert first.read_text(encoding="utf-8").splitlines() == seed_lines()
    to_stdout = cli(seeded, "lessons", "export")
    assert to_stdout.stdout == first.read_text(encoding="utf-8")
    assert "exported 7 lessons to stdout" in to_stdout.stderr
    empty = tmp_path / "empty"
    assert "imported 7" in cli(empty, "lessons", "import", str(first)).stdout
    cli(empty, "lessons", "export", "--out", str(second))
    assert second.read_bytes() == first.read_bytes()
    scoped = cli(seeded, "lessons", "export", "--scope", "proj").stdout.splitlines()
    assert len(scoped) == 2 and SYNTAX in scoped[1]


def test_import_reports_bad_lines_and_keeps_good_ones(store: Path, tmp_path: Path) -> None:
    lines = seed_lines()
    fresh = json.loads(lines[3])
    fresh["id"] = "les_fresh"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], "{oops", json.dumps(fresh)]) + "\n")
    result = cli(store, "lessons", "import", str(bad), code=1)
    assert "line 3: " in result.stdout and "imported 1" in result.stdout
    assert "skipped 1" in result.stdout and "--replace" in result.stdout
    assert as_json(store, "lessons", "show", "les_fresh")
    report = as_json(store, "lessons", "import", str(bad), "--replace", code=1)
    assert isinstance(report, dict)
    assert report["replaced"] == [CURRENCY, "les_fresh"] and report["errors"][0]["line"] == 3
    future = tmp_path / "future.jsonl"
    future.write_text('{"format":"lessonloop.lessons","version":2}\n' + lines[1] + "\n")
    refused = cli(store, "lessons", "import", str(future), code=1)
    assert "version 2 is not supported" in refused.stderr
    nowhere = tmp_path / "not_made"
    refused = cli(nowhere, "lessons", "import", str(future), code=1)
    assert "version 2 is not supported" in refused.stderr and not nowhere.exists()
    # An export saved with a byte order mark is still an export (it read as seed records).
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + "\n".join([lines[0], json.dumps(fresh)]).encode() + b"\n")
    restored = as_json(tmp_path / "from_marked", "lessons", "import", str(marked))
    assert isinstance(restored, dict) and restored["imported"] == ["les_fresh"]


def test_approve_and_deprecate_transitions(store: Path) -> None:
    assert "is now validated" in cli(store, "lessons", "approve", BOM).stdout
    again = cli(store, "lessons", "approve", BOM, code=1)
    assert f"lesson {BOM} is already validated" in again.stderr
    assert "only candidate" in cli(store, "lessons", "approve", OLD, code=1).stderr
    assert f"merged into {CURRENCY}" in cli(store, "lessons", "deprecate", DUP, code=1).stderr
    lesson = as_json(store, "lessons", "deprecate", BOM)
    assert isinstance(lesson, dict) and lesson["status"] == "deprecated"
    assert "no lesson" in cli(store, "lessons", "approve", "les_nope", code=1).stderr
    page = as_json(store, "lessons", "list", "--status", "deprecated")
    assert isinstance(page, dict) and {x["id"] for x in page["items"]} == {OLD, BOM}
    hits = as_json(store, "lessons", "search", "KeyError reading the first CSV column")
    assert isinstance(hits, list) and BOM not in [h["lesson"]["id"] for h in hits]
    with Memory.open(str(store), embedder=MiniLMEmbedder()) as memory:
        memory.flag_for_review(BOM, "deprecated, but learned again by run r9 (seen 2 times)")
    assert "is now candidate" in cli(store, "lessons", "restore", BOM).stdout
    with Memory.open(str(store), embedder=MiniLMEmbedder()) as memory:
        assert memory.review_flags() == []  # restoring answered the flag
    hits = as_json(store, "lessons", "search", "KeyError reading the first CSV column")
    assert isinstance(hits, list) and BOM in [h["lesson"]["id"] for h in hits]
    assert "only deprecated" in cli(store, "lessons", "restore", CURRENCY, code=1).stderr


def test_edit_reembeds(store: Path) -> None:
    edited = as_json(
        store, "lessons", "edit", TZ,
        "--symptom", "pandas read_excel returns NaT for every date cell",
        "--root-cause", "The sheet stores dates as text in day.month.year order",
        "--fix", "Parse with format='%d.%m.%Y'",
    )  # fmt: skip
    assert isinstance(edited, dict) and edited["fix"] == "Parse with format='%d.%m.%Y'"
    assert edited["applies_when"] == "reading CSV exports" and edited["status"] == "candidate"
    hits = as_json(store, "lessons", "search", "read_excel gives NaT dates", "--limit", "1")
    assert isinstance(hits, list) and hits[0]["lesson"]["id"] == TZ
    # A symptom that opens with blank lines is listed by its first line of text.
    cli(store, "lessons", "edit", TZ, "--symptom", "\n\nNaT in every date cell\nmore")
    listed = cli(store, "lessons", "list", "--error-type", "check_failed").stdout
    assert "    NaT in every date cell" in listed
    assert "nothing to change" in cli(store, "lessons", "edit", TZ, code=2).stderr
    assert "no lesson" in cli(store, "lessons", "edit", "les_x", "--fix", "y", code=1).stderr


def test_memory_check_repair_and_reindex(store: Path) -> None:
    with Memory.open(str(store), embedder=MiniLMEmbedder()) as memory:
        faults.lose_index_entries(memory, [BOM])  # drift: SQL says indexed, the index lost it
    # Any command on the store says so (a crash or a lost index directory went unnoticed).
    listed = cli(store, "lessons", "list")
    assert "warning: the vector index lags SQL (1 more lessons than index entries" in (
        listed.stderr
    )
    drift = cli(store, "memory", "check", code=1)
    assert "missing_in_index" in drift.stdout and BOM in drift.stdout
    assert "warning" not in drift.stderr  # the command that checks says it itself
    repaired = as_json(store, "memory", "check", "--repair", code=0)
    assert isinstance(repaired, dict)
    assert repaired["missing_in_index"] == [BOM] and repaired["repaired"] is True
    assert as_json(store, "memory", "check") == {
        "pending": [], "missing_in_index": [], "orphans_in_index": [],
        "metadata_drift": [], "repaired": False, "clean": True,
    }  # fmt: skip
    assert "warning" not in cli(store, "lessons", "list").stderr
    assert as_json(store, "memory", "reindex") == {"indexed": 7}
    assert "clean" in cli(store, "memory", "check").stdout


def test_plain_records_seed_a_store_through_the_write_path(store: Path, tmp_path: Path) -> None:
    records = [
        {  # the stored CURRENCY lesson again, in other words: folded, not duplicated
            "error_type": "runtime_error",
            "symptom": "ValueError: could not convert string to float: '$1,200'",
            "root_cause": "Prices carry a currency symbol and a thousands separator",
            "fix": "Strip the currency symbol and ',' before float()",
        },
        {
            "error_type": "KeyError",
            "symptom": "KeyError: 'Total' after reading an Excel export",
            "root_cause": "Header cells carry trailing spaces",
            "fix": "Strip header names; the API key sk-live-0123456789abcdef0123 is not a fix",
            "applies_when": "spreadsheet exports",
            "scope": "proj",
            "status": "validated",
        },
        {"error_type": "x", "symptom": "s", "root_cause": "r"},  # no fix
        {"error_type": "x", "symptom": "s", "root_cause": "r", "fix": "f", "id": "les_1"},
        {"error_type": "x", "symptom": "  ", "root_cause": "r", "fix": "f"},  # blank
    ]
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text("\n".join(json.dumps(r) for r in records) + "\n\nnot json\n")
    report = as_json(store, "lessons", "import", str(seeds), code=1)
    assert isinstance(report, dict)
    actions = [(line["line"], line["action"]) for line in report["lines"]]
    assert actions == [
        (1, "merged_duplicate"), (2, "created"), (3, "error"), (4, "error"), (5, "error"),
        (7, "error"),
    ]  # fmt: skip
    assert report["lines"][0]["lesson_id"] == CURRENCY
    assert "fix" in report["lines"][2]["message"] and "id" in report["lines"][3]["message"]
    assert report["lines"][4]["message"].startswith("symptom: ")
    created = as_json(store, "lessons", "show", report["lines"][1]["lesson_id"])
    assert isinstance(created, dict)
    lesson = created.get("lesson", created)
    assert lesson["scope"] == "proj" and lesson["status"] == "validated"
    assert "sk-live-0123456789abcdef0123" not in lesson["fix"]  # redacted like every write


def test_an_export_is_never_seeded(store: Path, tmp_path: Path) -> None:
    # A restore keeps ids and counters exactly; the same lines without the header are refused.
    lines = seed_lines()
    headless = tmp_path / "headless.jsonl"
    headless.write_text(lines[1] + "\n")
    report = as_json(store, "lessons", "import", str(headless), code=1)
    assert isinstance(report, dict) and report["lines"][0]["action"] == "error"


def test_memory_may_follow_the_command_name(seeded: Path) -> None:
    for argv in (
        ["lessons", "list", "--memory", str(seeded)],
        ["lessons", "--memory", str(seeded), "list", "--memory", str(seeded)],
        ["memory", "check", "--memory", str(seeded)],
    ):
        result = RUNNER.invoke(APP, argv)
        assert result.exit_code == 0, (argv, result.stdout, result.stderr)
    assert "of 7" in RUNNER.invoke(APP, ["lessons", "list", "--memory", str(seeded)]).stdout
    twice = RUNNER.invoke(
        APP, ["lessons", "--memory", str(seeded), "show", CURRENCY, "--memory", "/x"]
    )
    assert twice.exit_code == 2 and "--memory given twice" in twice.stderr
