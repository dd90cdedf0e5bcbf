"""The CLI sub-app through typer's runner on a real store, and the periodic worker."""

from __future__ import annotations

import io
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.app import cli_retro as cli
from agent.app.worker import parse_duration, run_periodic
from memory.embeddings import HashEmbedder
from memory.export import export_lessons, import_lessons
from memory.store import Memory
from retrospectives.consolidate import ConsolidationConfig, Consolidator
from tests.retro.test_consolidate import BOM, CURRENCY, draft

# The CLI opens MiniLM by default; the test store was built with the hashing embedder.
OBJ = {"embedder": HashEmbedder()}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "mem"
    with Memory.open(str(path), embedder=HashEmbedder(), dedup_similarity=1.01) as m:
        m.add_many([draft(r, f) for r, f in CURRENCY] + [draft(*BOM)])
    monkeypatch.setenv("LESSONLOOP_MEMORY", str(path))
    monkeypatch.setenv("LESSONLOOP_HOME", str(tmp_path / "home"))
    return path


def test_consolidate_json_then_undo(store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli.retro_app, obj=OBJ, args=["consolidate", "--no-model", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["new_lessons"] == 4 and "merges" in report
    for merge in report["merges"]:
        undone = runner.invoke(
            cli.retro_app, obj=OBJ, args=["consolidate", "--undo", merge["id"], "--json"]
        )
        assert undone.exit_code == 0 and json.loads(undone.stdout)["undone_at"]
    again = runner.invoke(cli.retro_app, obj=OBJ, args=["consolidate", "--undo", "mrg_missing"])
    assert again.exit_code == 2 and "no merge" in again.output


def test_review_lists_flags(store: Path) -> None:
    result = CliRunner().invoke(cli.retro_app, obj=OBJ, args=["review", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["flagged"] == []


def test_review_decisions_follow_the_curation_rules(store: Path) -> None:
    with Memory.open(str(store), embedder=HashEmbedder()) as m:
        a, b, c, d = [x.id for x in m.list_lessons().items[:4]]
        m.set_status(b, "deprecated")
        m.set_status(c, "merged", merged_into=a)
        m.set_status(d, "validated")
        for lesson_id in (a, b, c, d):
            m.flag_for_review(lesson_id, "test")
    runner = CliRunner()

    def review(*args: str) -> dict[str, object]:
        result = runner.invoke(cli.retro_app, obj=OBJ, args=["review", *args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    # --validate after --restore on one lesson: restored, then approved, whatever the order
    # typed; --validate on a validated lesson confirms it.
    report = review("--validate", a, "--validate", b, "--restore", b, "--validate", d)
    assert [f["lesson_id"] for f in report["flagged"]] == [c]  # type: ignore[index]
    refused = runner.invoke(cli.retro_app, obj=OBJ, args=["review", "--keep", d, "--validate", c])
    assert refused.exit_code == 2 and "undo the merge" in refused.output
    assert f"decided before the error (kept): {d}" in refused.output
    with Memory.open(str(store), embedder=HashEmbedder()) as m:
        assert [m.get(i).status for i in (a, b, c, d)] == [
            "validated", "validated", "merged", "validated"
        ]  # fmt: skip
        assert m.get(c).merged_into == a  # a refused --validate left the merge alone
        m.set_status(a, "deprecated")
        m.flag_for_review(a, "deprecated, but learned again")
    # Confirming a deprecation answers the relearned flag.
    confirmed = review("--deprecate", a)["flagged"]
    assert [f["lesson_id"] for f in confirmed] == [c]  # type: ignore[union-attr]


def test_parse_duration() -> None:
    assert parse_duration("10m") == 600 and parse_duration("45s") == 45
    assert parse_duration("2h") == 7200 and parse_duration("90") == 90
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_worker_stops_cleanly_when_told() -> None:
    with Memory.in_memory(HashEmbedder(), dedup_similarity=1.01) as memory:
        memory.add_many([draft(r, f) for r, f in CURRENCY])
        consolidator = Consolidator(memory, llm=None, config=ConsolidationConfig(threshold=0.6))
        stop = threading.Event()
        reports = []

        def on_report(report: object) -> None:
            reports.append(report)
            if len(reports) == 2:
                stop.set()  # what the SIGTERM handler does

        passes = run_periodic(consolidator, 0.01, stop, on_report=on_report)
        assert passes == 2 and len(reports[0].merges) == 1 and reports[1].merges == ()


def _aged(store: Path, days: int) -> None:
    """Make every lesson of `store` `days` old: export, back-date, import with --replace."""
    with Memory.open(str(store), embedder=HashEmbedder()) as m:
        buffer = io.StringIO()
        export_lessons(m, buffer)
        then = (datetime.now(UTC) - timedelta(days=days)).isoformat()
        lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
        for line in lines[1:]:
            line["created_at"] = line["updated_at"] = then
        aged = "".join(json.dumps(line) + "\n" for line in lines)
        import_lessons(m, io.StringIO(aged), replace=True)


def test_review_only_lists_unless_told_to_apply_the_policy(store: Path) -> None:
    with Memory.open(str(store), embedder=HashEmbedder()) as m:
        ids = [x.id for x in m.list_lessons().items]
        m.set_status(ids[0], "validated")  # a person approved it, long ago
    _aged(store, days=200)
    with Memory.open(str(store), embedder=HashEmbedder()) as m:
        m.flag_for_review(ids[1], "recalled into failing runs")
    runner = CliRunner()

    def statuses() -> list[str]:
        with Memory.open(str(store), embedder=HashEmbedder()) as m:
            return [m.get(i).status for i in ids]

    before = statuses()
    looked = runner.invoke(cli.retro_app, obj=OBJ, args=["review", "--json"])
    assert looked.exit_code == 0, looked.output
    assert json.loads(looked.stdout)["lift_policy"] is None
    shown = runner.invoke(cli.retro_app, obj=OBJ, args=["review"], terminal_width=80)
    assert shown.exit_code == 0 and ids[1] in shown.stdout  # the whole id, to copy
    assert statuses() == before  # looking changed nothing
    applied = runner.invoke(cli.retro_app, obj=OBJ, args=["review", "--apply-policy", "--json"])
    assert applied.exit_code == 0, applied.output
    policy = json.loads(applied.stdout)["lift_policy"]
    assert set(policy["decayed"]) == set(ids)  # unused for 200 days
    assert statuses() == ["candidate"] + ["deprecated"] * (len(ids) - 1)


def test_consolidate_says_what_the_lift_policy_changed(store: Path) -> None:
    _aged(store, days=200)
    runner = CliRunner()
    result = runner.invoke(cli.retro_app, obj=OBJ, args=["consolidate", "--no-model", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["lift_policy"]["decayed"] and report["lift_policy"]["validated"] == []
    with Memory.open(str(store), embedder=HashEmbedder()) as m:
        for lesson_id in report["lift_policy"]["decayed"]:
            assert m.get(lesson_id).status in ("deprecated", "candidate")
    text = runner.invoke(cli.retro_app, obj=OBJ, args=["consolidate", "--no-model"])
    assert text.exit_code == 0 and "lift policy: validated 0, flagged 0, decayed" in text.stdout
