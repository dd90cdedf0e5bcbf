"""agent/app/report.py: the HTML parses, every image is a real PNG, the tables carry figures.

The benchmark results are made with the scripts' own models (the JSON is the contract), the
memory is a real in-memory store. With Debian's chromium installed, the page is also
rendered headless to a screenshot.
"""

from __future__ import annotations

import base64
import re
import subprocess
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from agent.app.report import build_report, latest_learning
from memory import HashEmbedder, LessonDraft, Memory
from memory.quality import ranking_metrics
from scripts._benchlib import LearningResults, RunRecord, plot_curves
from scripts.bench_recall import MethodReport, RecallReport

PNG = b"\x89PNG\r\n\x1a\n"
CHROMIUM = Path("/usr/bin/chromium")


class Page(HTMLParser):
    """Collects <img> sources, table cells per table, and all text."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.tables: list[list[str]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        elif tag == "table":
            self.tables.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def record(cond: str, order: int, pos: int, passed: bool) -> RunRecord:
    return RunRecord.model_validate(
        {
            "condition": cond,
            "seed": 0,
            "order": order,
            "position": pos,
            "phase": "train" if pos < 2 else "eval",
            "task_id": f"t{pos}",
            "family": "f",
            "passed": passed,
            "first_round_passed": passed and pos % 2 == 0,
            "rounds": 1 if passed else 3,
            "stop_reason": "passed" if passed else "max_rounds",
            "tokens": 500 + 100 * pos,
            "seconds": 10.0,
            "retro_tokens": 50 if cond != "none" else 0,
        }
    )


def write_learning_results(run_dir: Path) -> None:
    """A small scripted learning benchmark result (JSON + PNG) in `run_dir`."""
    records = [
        record(cond, order, pos, passed=(pos + order) % 3 != 0 or cond == "learning")
        for cond in ("none", "learning", "frozen")
        for order in (0, 1)
        for pos in range(4)
    ]
    results = LearningResults(
        config={"model": "scripted", "orders": 2, "seeds": 1, "max_rounds": 3},
        tasks=["t0", "t1", "t2", "t3"],
        split=2,
        orders={0: ["t0"], 1: ["t0"]},
        planned_runs={"none": 4},
        estimate_min=1.0,
        started=time.time(),
        finished=time.time(),
        records=records,
    )
    results.save(run_dir / "bench_learning.json")
    plot_curves(records, 2, run_dir / "bench_learning.png")


@pytest.fixture()
def results_dir(tmp_path: Path) -> Path:
    root = tmp_path / "bench-results"
    run_dir = root / "learning-20260101-000000"
    write_learning_results(run_dir)
    (root / "older").mkdir()
    (root / "older" / "bench_learning.json").write_text('{"benchmark": "something else"}')
    method = MethodReport(
        name="recall as built",
        no_lesson_rate=0.85,
        related=ranking_metrics([["a"], ["b", "a"]], ["a", "a"]),
    )
    recall = RecallReport(embedder="hash", lessons=2, methods=(method,), queries=(), seconds=1)
    (root / "bench_recall-x.json").write_text(recall.model_dump_json())
    return root


@pytest.fixture()
def memory() -> Iterator[Memory]:
    with Memory.in_memory(HashEmbedder()) as store:
        for i, cause in enumerate(["currency symbols in amounts", "a byte order mark <script>"]):
            added = store.add(
                LessonDraft(
                    scope="s",
                    error_type="ValueError",
                    symptom=f"symptom {i}",
                    root_cause=cause,
                    fix=f"fix number {i}",
                )
            ).lesson
            assert added is not None
            store.record_run(f"r{i}", scope="s")
            store.report_use(f"r{i}", "reflection", [added.id])
            store.finish_run(f"r{i}", passed=i == 0)
        yield store


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def check_images(page: Page, base: Path) -> None:
    assert page.images, "the report has no image"
    for src in page.images:
        if src.startswith("data:image/png;base64,"):
            assert base64.b64decode(src.split(",", 1)[1], validate=True).startswith(PNG)
        else:
            assert (base / src).is_file() and (base / src).read_bytes().startswith(PNG)


def test_report_has_curves_figures_hygiene_and_lessons(
    tmp_path: Path, results_dir: Path, memory: Memory
) -> None:
    out = build_report(tmp_path / "site" / "report.html", results_dir=results_dir, memory=memory)
    page = parse(out)
    check_images(page, out.parent)
    text = " ".join(page.text)
    for heading in ("Learning benchmark", "Recall benchmark", "Memory hygiene", "Top lessons"):
        assert heading in text
    cells = [cell for table in page.tables for cell in table]
    assert any(c.endswith("%") and c[0].isdigit() for c in cells)  # success rates
    assert "learning" in cells and "frozen" in cells and "recall as built" in cells
    hygiene = next(t for t in page.tables if "duplicate rate" in t)
    assert hygiene[hygiene.index("junk rate") + 1].endswith("%")
    assert "fix number 0" in cells  # the lesson that helped is listed
    assert "<script>" not in out.read_text()  # lesson text is escaped


def test_report_without_results_or_memory(tmp_path: Path) -> None:
    out = build_report(tmp_path / "r.html", results_dir=tmp_path / "nothing", memory=None)
    page = parse(out)
    assert not page.images and "No bench_learning results" in " ".join(page.text)
    assert latest_learning(tmp_path / "nothing") is None


def test_headless_chromium_renders_the_page(
    tmp_path: Path, results_dir: Path, memory: Memory
) -> None:
    """A real browser decodes every image (naturalWidth > 0) and paints the plots."""
    if not CHROMIUM.exists():  # scripts/install.sh installs it; a bare pip install may not
        pytest.skip("needs /usr/bin/chromium (Debian: apt-get install chromium)")
    out = build_report(tmp_path / "report.html", results_dir=results_dir, memory=memory)
    n_images = len(parse(out).images)
    assert n_images >= 1
    # A copy of the page that writes, once loaded, each image's decoded width into the DOM.
    probe = tmp_path / "probe.html"
    probe.write_text(
        out.read_text()
        + "<script>window.addEventListener('load', () => {document.body.dataset.widths ="
        " Array.from(document.images, i => i.complete ? i.naturalWidth : -1).join(',');"
        "});</script>"
    )
    dom = _chromium(tmp_path, "--dump-dom", "--virtual-time-budget=10000", probe.as_uri())
    widths = [int(w) for w in re.findall(r'data-widths="([-0-9,]*)"', dom)[0].split(",")]
    assert len(widths) == n_images and all(w > 100 for w in widths), widths

    shot = tmp_path / "shot.png"
    _chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", out.as_uri())
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000) or []
    assert len(colours) > 50  # text, tables and plotted lines, not an empty white page


def _chromium(tmp_path: Path, *args: str) -> str:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
