"""`lessonloop stats [--quality]` and `lessonloop report [--open]`: figures for people."""

from __future__ import annotations

import json
import sys
import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent.app.cli_memory import MemoryOption
from agent.app.report import build_report
from agent.app.session import open_memory
from agent.app.settings import Settings
from memory import curate
from memory.quality import QualityReport, quality_report

report_app = typer.Typer(no_args_is_help=True, add_completion=False)
out = Console()


@report_app.command("stats")
def stats_cmd(
    memory: MemoryOption = None,
    quality: Annotated[bool, typer.Option("--quality", help="Memory hygiene figures")] = False,
    top: Annotated[int, typer.Option("--top", min=1, max=100)] = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Lesson counts; with --quality the duplicate, junk and recall-loop rates and lift share."""
    store = open_memory(Settings.from_env(memory=memory), existing=True)
    try:
        summary = curate.lesson_stats(store, top=top)
        hygiene = quality_report(store) if quality else None
    finally:
        store.close()
    if as_json:
        data = {"lessons": summary.model_dump(mode="json")}
        if hygiene is not None:
            data["quality"] = hygiene.model_dump(mode="json")
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    by_status = ", ".join(f"{k} {v:,}" for k, v in summary.by_status.items())
    out.print(f"{summary.total:,} lessons: {by_status}")
    if hygiene is not None:
        out.print(_quality_table(hygiene))


def _quality_table(q: QualityReport) -> Table:
    def pct(rate: float | None) -> str:
        return "n/a" if rate is None else f"{rate:.1%}"

    table = Table(title="memory hygiene")
    for col in ("figure", "rate", "count", "what it means"):
        table.add_column(col)
    table.add_row(
        "duplicate rate",
        pct(q.duplicate_rate),
        f"{q.duplicate_lessons}/{q.active}",
        f"active lessons with a near-identical one in their scope (cos >= "
        f"{q.duplicate_threshold:.2f})",
    )
    table.add_row(
        "junk rate",
        pct(q.junk_rate),
        f"{q.junk_lessons}/{q.active}",
        f"never recalled ({q.never_recalled}) or flagged for review ({q.flagged})",
    )
    table.add_row(
        "recall-loop rate",
        pct(q.recall_loop_rate),
        f"{q.recall_loops}/{q.written}",
        "written lessons that restate one the same run was given",
    )
    table.add_row(
        "lift measured",
        pct(q.lift_share),
        f"{q.with_lift}/{q.active}",
        f"lessons used in a finished run; {q.helpful} helped",
    )
    return table


@report_app.command("report")
def report_cmd(
    memory: MemoryOption = None,
    results_dir: Annotated[
        Path, typer.Option("--results-dir", help="Where the benchmarks wrote JSON/PNG")
    ] = Path("bench-results"),
    out_path: Annotated[Path | None, typer.Option("--out", help="HTML file to write")] = None,
    open_it: Annotated[bool, typer.Option("--open", help="Open it in a browser")] = False,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="Leave lessons out")] = False,
) -> None:
    """Write one static HTML page: benchmark curves, hygiene figures, top lessons."""
    settings = Settings.from_env(memory=memory)
    target = out_path or settings.home / "report.html"
    store = None if no_memory else open_memory(settings, existing=True)
    try:
        path = build_report(target, results_dir=results_dir, memory=store)
    finally:
        if store is not None:
            store.close()
    out.print(f"wrote {path}")
    if open_it:
        webbrowser.open(path.resolve().as_uri())
