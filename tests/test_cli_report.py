"""`lessonloop stats --quality` and `lessonloop report` through the CLI on a real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from memory import LessonDraft, Memory, MiniLMEmbedder


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LESSONLOOP_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def seed_store(path: Path) -> None:
    store = Memory.open(str(path), embedder=MiniLMEmbedder())
    try:
        for cause, fix in [
            ("the CSV starts with a UTF-8 BOM", "open it with encoding='utf-8-sig'"),
            ("amounts carry a currency symbol and commas", "strip '$' and ',' before float()"),
        ]:
            store.add(
                LessonDraft(
                    scope="s", error_type="ValueError", symptom=cause, root_cause=cause, fix=fix
                )
            )
    finally:
        store.close()


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.srcs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.srcs.extend(v for k, v in attrs if k == "src" and v)


def test_stats_quality_and_report(tmp_path: Path) -> None:
    store = tmp_path / "store"
    seed_store(store)
    proc = cli("stats", "--quality", "--json", "--memory", str(store), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["lessons"]["total"] == 2
    quality = data["quality"]
    assert quality["active"] == 2 and quality["duplicate_rate"] == 0.0
    assert quality["junk_rate"] == 1.0  # neither lesson has been recalled yet

    out = tmp_path / "report.html"
    proc = cli(
        "report",
        "--memory",
        str(store),
        "--out",
        str(out),
        "--results-dir",
        str(tmp_path / "no-results"),
        home=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "utf-8-sig" in html  # top lessons are shown
    parser = _Images()
    parser.feed(html)
    for src in parser.srcs:  # every image must resolve
        assert src.startswith("data:image/png;base64,") or (out.parent / src).is_file()
