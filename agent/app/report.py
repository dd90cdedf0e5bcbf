"""`lessonloop report`: one static HTML page with the latest benchmark figures and the memory.

    path = build_report(Path("report.html"), results_dir=Path("bench-results"), memory=memory)

Sections: the newest bench_learning run under `results_dir` (its figures per condition and
its curves), the newest bench_recall run (hit@k, MRR, no-lesson rate per method), the
memory's hygiene figures (`memory.quality.quality_report`) and its most helpful lessons.
Images are embedded as base64 PNG, so the page is a single file that can be mailed or
archived. The benchmark JSON is read leniently (unknown fields ignored): it is the contract
with scripts/bench_*.py, which the packages never import.
"""

from __future__ import annotations

import base64
import html
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.quality import QualityReport, quality_report, top_lessons
from memory.store import Memory

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_CONDITIONS = ("none", "learning", "frozen")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Spread(_Lenient):
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    n: int = 0


class _Metrics(_Lenient):
    runs: int = 0
    first_round_success: _Spread = _Spread()
    final_success: _Spread = _Spread()
    mean_rounds: _Spread = _Spread()
    tokens_per_solved: _Spread = _Spread()
    seconds_per_solved: _Spread = _Spread()
    retro_tokens_per_solved: _Spread = _Spread()
    recall_rate: _Spread = _Spread()
    lessons_created: _Spread = _Spread()


class _Summary(_Lenient):
    whole: dict[str, _Metrics] = {}
    eval: dict[str, _Metrics] = {}


class LearningRun(_Lenient):
    """What the report reads from bench_learning.json."""

    benchmark: str
    config: dict[str, Any] = {}
    tasks: list[str] = []
    split: int = 0
    started: float = 0.0
    finished: float | None = None
    interrupted: bool = False
    png: str = "bench_learning.png"
    summary: _Summary = _Summary()
    records: list[dict[str, Any]] = []


class _RecallMetrics(_Lenient):
    n: int = 0
    hit_at_1: float = 0.0
    hit_at_3: float = 0.0
    mrr: float = 0.0
    empty: int = 0


class _RecallMethod(_Lenient):
    name: str
    related: _RecallMetrics
    no_lesson_rate: float | None = None
    note: str = ""


class RecallRun(_Lenient):
    """What the report reads from a bench_recall JSON."""

    benchmark: str
    embedder: str = ""
    lessons: int = 0
    methods: list[_RecallMethod] = []


def _newest(results_dir: Path, pattern: str, benchmark: str) -> tuple[Path, dict[str, Any]] | None:
    """The most recently written JSON matching `pattern` whose "benchmark" is `benchmark`."""
    if not results_dir.is_dir():
        return None
    for path in sorted(results_dir.rglob(pattern), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a file being written, or not ours
        if isinstance(data, dict) and data.get("benchmark") == benchmark:
            return path, data
    return None


def latest_learning(results_dir: Path) -> tuple[Path, LearningRun] | None:
    """The newest bench_learning result under `results_dir`, if any."""
    found = _newest(results_dir, "bench_learning*.json", "bench_learning")
    if found is None:
        return None
    try:
        return found[0], LearningRun.model_validate(found[1])
    except ValidationError:
        return None


def latest_recall(results_dir: Path) -> tuple[Path, RecallRun] | None:
    """The newest bench_recall result under `results_dir`, if any."""
    found = _newest(results_dir, "bench_recall*.json", "bench_recall")
    if found is None:
        return None
    try:
        return found[0], RecallRun.model_validate(found[1])
    except ValidationError:
        return None


# -- HTML pieces ---------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _spread(s: _Spread, fmt: str = "{:.2f}", percent: bool = False) -> str:
    if s.mean is None:
        return "-"
    show = _pct if percent else fmt.format
    text = show(s.mean)
    if s.n > 1 and s.min is not None and s.max is not None and s.min != s.max:
        text += f" [{show(s.min)}-{show(s.max)}]"
    return text


def _png_data_uri(path: Path) -> str | None:
    """The PNG as a data: URI, or None when the file is missing or not a PNG."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if not raw.startswith(_PNG_MAGIC):
        return None
    return "data:image/png;base64," + base64.b64encode(raw).decode("ascii")


_METRIC_HEADERS = (
    "condition",
    "runs",
    "first-round success",
    "final success",
    "mean rounds",
    "tokens / solved",
    "seconds / solved",
    "retrospective tokens / solved",
    "runs given a lesson",
    "lessons written",
)


def _metric_rows(part: dict[str, _Metrics]) -> list[list[str]]:
    ordered = [c for c in _CONDITIONS if c in part] + [c for c in part if c not in _CONDITIONS]
    return [
        [
            cond,
            str(m.runs),
            _spread(m.first_round_success, percent=True),
            _spread(m.final_success, percent=True),
            _spread(m.mean_rounds),
            _spread(m.tokens_per_solved, "{:.0f}"),
            _spread(m.seconds_per_solved, "{:.1f}"),
            _spread(m.retro_tokens_per_solved, "{:.0f}"),
            _spread(m.recall_rate, percent=True),
            _spread(m.lessons_created, "{:.0f}"),
        ]
        for cond, m in ((c, part[c]) for c in ordered)
    ]


def _learning_section(found: tuple[Path, LearningRun] | None, results_dir: Path) -> str:
    if found is None:
        return f"<p>No bench_learning results under {_e(results_dir)}.</p>"
    path, run = found
    cfg = run.config
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.started)) if run.started else "?"
    state = "interrupted (partial results)" if run.interrupted else "complete"
    if run.finished is None:
        state = "running or killed (partial results)"
    facts = [
        ("results", str(path)),
        ("started", when),
        ("state", state),
        ("model", cfg.get("model", "?")),
        ("tasks", len(run.tasks)),
        ("orders x seeds", f"{cfg.get('orders', '?')} x {cfg.get('seeds', '?')}"),
        ("train split", f"first {run.split} of each order"),
        ("max rounds", cfg.get("max_rounds", "?")),
        ("records", len(run.records)),
    ]
    parts = ["<h2>Learning benchmark</h2>", _table(("", ""), facts, "facts")]
    if run.summary.whole:
        parts += [
            "<h3>Whole stream (mean [min-max] over orders x seeds)</h3>",
            _table(_METRIC_HEADERS, _metric_rows(run.summary.whole), "figures"),
        ]
    if run.summary.eval:
        parts += [
            "<h3>Evaluation part, after the split (frozen memory: read-only)</h3>",
            _table(_METRIC_HEADERS, _metric_rows(run.summary.eval), "figures"),
        ]
    uri = _png_data_uri(path.parent / run.png)
    if uri is not None:
        parts.append(f'<img alt="learning curves" src="{uri}">')
    else:
        parts.append(f"<p>No curves image ({_e(run.png)}) next to the results.</p>")
    return "\n".join(parts)


def _recall_section(found: tuple[Path, RecallRun] | None) -> str:
    if found is None:
        return ""
    path, run = found
    rows = [
        [
            m.name,
            f"{m.related.hit_at_1:.2f}",
            f"{m.related.hit_at_3:.2f}",
            f"{m.related.mrr:.2f}",
            str(m.related.empty),
            "N/A" if m.no_lesson_rate is None else f"{m.no_lesson_rate:.2f}",
            m.note,
        ]
        for m in run.methods
    ]
    n = run.methods[0].related.n if run.methods else 0
    headers = ("method", "hit@1", "hit@3", "MRR", "empty (related)", "no-lesson rate", "note")
    return "\n".join(
        [
            "<h2>Recall benchmark</h2>",
            f"<p>{n} labelled error outputs, {run.lessons} lessons, embedder {_e(run.embedder)} "
            f"({_e(path)}).</p>",
            _table(headers, rows, "figures"),
        ]
    )


def _quality_section(q: QualityReport) -> str:
    statuses = sorted(q.by_status.items())
    rows = [
        ("lessons (all statuses)", q.lessons, ", ".join(f"{k} {v}" for k, v in statuses)),
        ("active lessons", q.active, "candidate or validated"),
        (
            "duplicate rate",
            _pct(q.duplicate_rate),
            f"{q.duplicate_lessons} with a near-identical twin (cosine >= {q.duplicate_threshold})",
        ),
        (
            "junk rate",
            _pct(q.junk_rate),
            f"{q.never_recalled} never recalled, {q.flagged} flagged for review",
        ),
        (
            "recall-loop rate",
            _pct(q.recall_loop_rate),
            f"{q.recall_loops} of {q.written} written lessons restate a lesson the run was given",
        ),
        (
            "share with measured lift",
            _pct(q.lift_share),
            f"{q.with_lift} measured, {q.helpful} with positive lift",
        ),
        ("runs", q.runs, f"{q.finished_runs} finished, {q.aborted_runs} ended by an error"),
    ]
    return "<h2>Memory hygiene</h2>\n" + _table(("figure", "value", "detail"), rows, "figures")


def _lessons_section(memory: Memory, limit: int) -> str:
    rows = []
    for standing in top_lessons(memory, limit):
        x, lift = standing.lesson, standing.lift
        measured = "-" if lift is None or lift.lift is None else f"{lift.lift:+.2f} (n={lift.n})"
        rows.append(
            [
                x.id,
                x.scope,
                x.error_type,
                x.status,
                x.symptom[:160],
                x.fix[:200],
                x.recalled,
                x.helped,
                x.misled,
                measured,
            ]
        )
    if not rows:
        return "<h2>Top lessons</h2><p>The memory holds no active lessons yet.</p>"
    headers = (
        "id",
        "scope",
        "error type",
        "status",
        "symptom",
        "fix",
        "recalled",
        "helped",
        "misled",
        "lift",
    )
    return "<h2>Top lessons (most helpful first)</h2>\n" + _table(headers, rows, "lessons")


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } table.facts th { display: none; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


def render_report(
    *, results_dir: Path, memory: Memory | None, top: int = 15, title: str = "lessonloop report"
) -> str:
    """The report page as an HTML string."""
    sections = [
        _learning_section(latest_learning(results_dir), results_dir),
        _recall_section(latest_recall(results_dir)),
    ]
    if memory is not None:
        sections += [_quality_section(quality_report(memory)), _lessons_section(memory, top)]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{_CSS}</style></head>\n<body><h1>{_e(title)}</h1><p>Generated {stamp}.</p>\n"
        + "\n".join(s for s in sections if s)
        + "\n</body></html>\n"
    )


def build_report(out: Path, *, results_dir: Path, memory: Memory | None, top: int = 15) -> Path:
    """Write the report to `out` (one self-contained HTML file) and return its path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(render_report(results_dir=results_dir, memory=memory, top=top), "utf-8")
        tmp.replace(out)  # a browser reloading the page never sees half a file
    finally:
        tmp.unlink(missing_ok=True)  # a failed write (a full disk) leaves nothing behind
    return out
