"""The `lessonloop` command: parses, calls the public API, prints with rich. No logic here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent.errors import LessonloopError
from agent.loop import LoopEvent
from agent.result import RunResult
from agent.session import run_task
from agent.settings import Settings

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
err = Console(stderr=True)
out = Console()


def _progress(event: LoopEvent) -> None:
    cost = f"{event.usage.total_tokens} tok, " if event.usage.total_tokens else ""
    style = {"stopped": "bold", "checked": "cyan", "recalled": "magenta"}.get(event.kind, "")
    err.print(
        f"[{style}]round {event.round:>2}  {event.kind:<9} {event.detail}[/]"
        f"  [dim]({cost}{event.seconds:.1f}s)[/]"
    )


@app.command()
def run(
    task_dir: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="Task directory")],
    model: Annotated[str | None, typer.Option("--model", help="e.g. local, openai:gpt-4o-mini")] = None,
    max_rounds: Annotated[int | None, typer.Option("--max-rounds", min=1)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON")] = False,
) -> None:
    """Run one task through generate -> check -> reflect -> refine."""
    try:
        settings = Settings.from_env(model=model, max_rounds=max_rounds)
        result = run_task(task_dir, settings, observer=_progress)
    except LessonloopError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        sys.stdout.write(json.dumps(result.summary(), indent=2) + "\n")
    else:
        _print_summary(result)
    raise typer.Exit(0 if result.passed else 1)


def _print_summary(result: RunResult) -> None:
    table = Table(title=f"{result.task_id}: {'PASSED' if result.passed else 'FAILED'}")
    for col in ("round", "action", "verdict", "summary", "tokens", "seconds"):
        table.add_column(col)
    for r in result.rounds:
        fb = r.feedback
        table.add_row(
            str(r.round),
            r.action + (f" (+{r.resamples} resampled)" if r.resamples else ""),
            f"{fb.stage}: {fb.kind}",
            fb.summary.splitlines()[0][:70] if fb.summary else "",
            str(r.usage.total_tokens),
            f"{r.seconds:.1f}",
        )
    out.print(table)
    out.print(
        f"stop: {result.stop_reason}; best round {result.best_round}; "
        f"{result.usage.total_tokens} tokens; {result.seconds:.1f}s; run dir {result.run_dir}"
    )
    for issue in result.unresolved:
        out.print(f"[yellow]unresolved:[/] {issue}")


def main() -> None:
    app()
