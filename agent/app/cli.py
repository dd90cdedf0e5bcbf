"""The `lessonloop` command: parses, calls the public API, prints with rich. No logic here."""

from __future__ import annotations

import errno
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.app.cli_lessons import lessons_app
from agent.app.cli_memory import MemoryOption, memory_app
from agent.app.cli_report import report_app
from agent.app.cli_retro import retro_app
from agent.app.demo import DemoReport
from agent.app.session import SessionResult, open_memory, run_task, why_no_lesson
from agent.app.settings import Settings, invalid_settings
from agent.errors import LessonloopError
from agent.loop import LoopEvent
from agent.result import STOP_MEANS
from agent.task import load_task
from memory import LessonMemoryError

# What a user can act on: our own errors, the memory's, and a bad LESSONLOOP_* value
# (pydantic's ValidationError from Settings). Anything else is a bug and keeps its traceback.
USER_ERRORS = (LessonloopError, LessonMemoryError, ValidationError)
# A disk that is full or read-only: the machine's state, not a bug (a write() names no file).
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
err = Console(stderr=True, soft_wrap=True)
out = Console()


@app.callback()
def _root() -> None:
    """lessonloop: a memory-backed learning agent."""


def _progress(event: LoopEvent) -> None:
    cost = f"{event.usage.total_tokens} tok, " if event.usage.total_tokens else ""
    style = {"stopped": "bold", "checked": "cyan", "recalled": "magenta"}.get(event.kind, "")
    line = Text(f"round {event.round:>2}  {event.kind:<9} {event.detail}", style=style)
    line.append(f"  ({cost}{event.seconds:.1f}s)", style="dim")
    err.print(line)


@app.command()
def run(
    task_dir: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="Task directory")],
    model: Annotated[
        str | None, typer.Option("--model", help="local | local:PATH.gguf | openai:MODEL")
    ] = None,
    max_rounds: Annotated[int | None, typer.Option("--max-rounds", min=1)] = None,
    retro_model: Annotated[
        str | None,
        typer.Option("--retro-model", help="Model that writes the lessons (default: --model)"),
    ] = None,
    pool_size: Annotated[
        int | None,
        typer.Option("--pool-size", min=1, help="Candidates checked per refinement round"),
    ] = None,
    first_pool: Annotated[
        int | None,
        typer.Option("--first-pool", min=1, help="Candidates checked in round 1 (greedy + hot)"),
    ] = None,
    token_budget: Annotated[
        int | None, typer.Option("--token-budget", min=1, help="Tokens one task may spend")
    ] = None,
    memory: MemoryOption = None,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="No recall, no lessons")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON")] = False,
) -> None:
    """Run one task through generate -> check -> reflect -> refine, learning from it."""
    try:
        settings = Settings.from_env(
            model=model,
            retro_model=retro_model,
            max_rounds=max_rounds,
            memory=memory,
            pool_size=pool_size,
            first_pool=first_pool,
            token_budget=token_budget,
        )
        load_task(task_dir)  # a malformed task fails before a store is made for it
        store = None if no_memory else open_memory(settings)
        try:
            result = run_task(task_dir, settings, memory=store, observer=_progress)
        finally:
            if store is not None:
                store.close()
    except USER_ERRORS as exc:
        err.print(Text("error: ", style="red") + Text(user_error(exc)))
        raise typer.Exit(2) from exc
    if as_json:
        sys.stdout.write(result.summary().model_dump_json(indent=2) + "\n")
    else:
        _print_summary(result, with_memory=not no_memory)
    raise typer.Exit(0 if result.run.passed else 1)


def _print_summary(session: SessionResult, *, with_memory: bool) -> None:
    result = session.run
    table = Table(title=f"{result.task_id}: {'PASSED' if result.passed else 'FAILED'}")
    for col in ("round", "action", "verdict", "summary", "tokens", "seconds"):
        table.add_column(col)
    for r in result.rounds:
        fb = r.feedback
        table.add_row(
            str(r.round),
            r.action
            + (f" of round {r.base_round}" if r.base_round not in (None, r.round - 1) else "")
            + (f" (best of {len(r.pool)})" if len(r.pool) > 1 else "")
            + (f" (+{r.resamples} unchecked: repeats or no program)" if r.resamples else ""),
            f"{fb.stage}: {fb.kind}",
            fb.summary.splitlines()[0][:70] if fb.summary else "",
            str(r.usage.total_tokens),
            f"{r.seconds:.1f}",
        )
    out.print(table)
    out.print(
        f"stop: {result.stop_reason} ({STOP_MEANS[result.stop_reason]}); best round "
        f"{result.best_round}; {result.usage.total_tokens} tokens; {result.seconds:.1f}s; "
        f"run dir {result.run_dir}"
    )
    for issue in result.unresolved:
        out.print(Text("unresolved: ", style="yellow") + Text(issue))
    if result.recalled_lesson_ids:
        out.print(f"recalled lessons: {', '.join(result.recalled_lesson_ids)}")
    for added in session.lessons:
        lesson_id = added.lesson.id if added.lesson else "-"
        out.print(Text(f"lesson {added.action}: {lesson_id} ", style="green") + Text(added.reason))
    if not session.lessons and with_memory:
        out.print(Text("no lesson stored: ", style="dim") + Text(why_no_lesson(result)))
    if session.process is not None:
        out.print(Text("retrospective: ", style="green") + Text(session.process.render()))
    if session.consolidation is not None:
        report = session.consolidation
        out.print(
            f"consolidation: {report.new_lessons} waiting lessons -> {len(report.merges)} merges"
        )


@app.command()
def demo(
    tasks: Annotated[
        list[Path] | None,
        typer.Argument(help="Two task dirs with one trap (default: two BOM traps)"),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model spec")] = None,
    memory: Annotated[
        str | None,
        typer.Option("--memory", help="Store to use (default: ~/.lessonloop/demo, emptied)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON")] = False,
) -> None:
    """Watch it learn: task A teaches a lesson, task B uses it, task B without memory compares."""
    from agent.app.demo import run_demo

    if tasks is not None and len(tasks) != 2:
        err.print(Text("error: ", style="red") + Text("give two task directories, or none"))
        raise typer.Exit(2)

    def on_step(label: str, task_dir: Path, with_memory: bool) -> None:
        err.rule(f"{label}: {task_dir.name}")

    try:
        settings = Settings.from_env(model=model)
        report = run_demo(
            settings,
            tasks=(tasks[0], tasks[1]) if tasks else None,
            observer=_progress,
            on_step=on_step,
            memory=memory,
        )
    except USER_ERRORS as exc:
        err.print(Text("error: ", style="red") + Text(str(exc)))
        raise typer.Exit(2) from exc
    if as_json:
        sys.stdout.write(report.summary().model_dump_json(indent=2) + "\n")
    else:
        _print_demo(report)


def _print_demo(report: DemoReport) -> None:
    first = report.steps[0]
    for lesson in first.lessons_stored:
        out.print(Text(f"lesson stored by task A ({lesson.id}):", style="bold green"))
        out.print(Text(f"  symptom:    {lesson.symptom}"))
        out.print(Text(f"  root cause: {lesson.root_cause}"))
        out.print(Text(f"  fix:        {lesson.fix}"))
    if len(report.steps) > 1:
        recalled = ", ".join(lesson.id for lesson in report.steps[1].lessons_recalled) or "none"
        out.print(Text(f"recalled at the start of task B: {recalled}", style="magenta"))
    table = Table(title="the demo's runs")
    for col in ("run", "passed", "rounds", "candidates", "tokens", "seconds"):
        table.add_column(col)
    for step in report.steps:
        run = step.result.run
        table.add_row(
            step.label,
            "yes" if run.passed else "no",
            str(len(run.rounds)),
            str(run.candidates_checked),
            str(run.usage.total_tokens),
            f"{run.seconds:.0f}",
        )
    out.print(table)
    out.print(Text(f"verdict: {report.verdict}", style="bold"))
    out.print(f"memory kept at {report.memory} (lessonloop lessons --memory {report.memory} list)")


@app.command()
def doctor(
    model: Annotated[
        str | None, typer.Option("--model", help="The model to check (default: the configured)")
    ] = None,
    memory: MemoryOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON")] = False,
) -> None:
    """Check this machine: llama.cpp build, model file, a generation, sandbox, embedder, store."""
    from agent.app.doctor import Check, run_doctor

    try:
        settings = Settings.from_env(model=model, memory=memory)
    except ValidationError as exc:
        err.print(Text("error: ", style="red") + Text(user_error(exc)))
        raise typer.Exit(2) from exc

    def show(check: Check) -> None:
        mark = Text(" ok  ", style="green") if check.ok else Text("FAIL ", style="bold red")
        line = mark + Text(f"{check.name:<9} ", style="bold") + Text(check.detail)
        line.append(f"  ({check.seconds:.1f}s)", style="dim")
        err.print(line)
        if not check.ok and check.remedy:
            err.print(Text(f"      fix: {check.remedy}", style="yellow"))

    report = run_doctor(settings, on_check=None if as_json else show)
    if as_json:
        payload = {"ok": report.ok, "checks": [c.model_dump() for c in report.checks]}
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        failed = [c.name for c in report.checks if not c.ok]
        err.print("all checks passed" if not failed else f"failed: {', '.join(failed)}")
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="0: a free port")] = 0,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Access token every request needs (required off loopback; "
            "default: $LESSONLOOP_CONSOLE_TOKEN)",
        ),
    ] = None,
    memory: MemoryOption = None,
    results_dir: Annotated[
        Path, typer.Option("--results-dir", help="Where the benchmarks wrote JSON/PNG")
    ] = Path("bench-results"),
) -> None:
    """The lesson console: a local web app to search, inspect and curate the lessons."""
    from agent.app.console.serve import serve as run_console

    try:
        settings = Settings.from_env(memory=memory)
        secret = token or (
            settings.console_token.get_secret_value() if settings.console_token else None
        )
        run_console(
            settings,
            host=host,
            port=port,
            token=secret,
            results_dir=results_dir,
            on_ready=lambda url: err.print(Text(f"lessonloop console on {url}  (Ctrl-C stops it)")),
        )
    except USER_ERRORS as exc:
        err.print(Text("error: ", style="red") + Text(str(exc)))
        raise typer.Exit(2) from exc


class McpTransport(StrEnum):
    """`--transport` values (agent.app.mcp_server.Transport)."""

    stdio = "stdio"
    http = "http"


@app.command()
def mcp(
    memory: MemoryOption = None,
    transport: Annotated[
        McpTransport, typer.Option("--transport", help="stdio (launched by a client) or http")
    ] = McpTransport.stdio,
    host: Annotated[str, typer.Option("--host", help="HTTP: address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="HTTP: 0 = free")] = 0,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="LESSONLOOP_MCP_TOKEN",
            help="HTTP: every request needs 'Authorization: Bearer TOKEN' (required off loopback)",
        ),
    ] = None,
) -> None:
    """Serve the memory to any assistant over MCP: recall, record, report outcomes, curate."""
    from agent.app.mcp_server import check_bind, serve
    from agent.app.mcp_tools import LessonTools

    try:
        if transport is McpTransport.http:
            check_bind(host, token)
        settings = Settings.from_env(memory=memory)
        store = open_memory(settings)
    except USER_ERRORS as exc:
        err.print(Text("error: ", style="red") + Text(user_error(exc)))
        raise typer.Exit(2) from exc
    try:
        serve(
            LessonTools(store),
            transport=transport.value,
            host=host,
            port=port,
            token=token,
            on_listen=lambda url: err.print(f"lessonloop MCP server on {url}"),
        )
    finally:
        store.close()


app.add_typer(lessons_app, name="lessons")
app.add_typer(memory_app, name="memory")
app.add_typer(retro_app)  # top-level `consolidate` and `review`
app.add_typer(report_app)  # top-level `stats` and `report`


def main() -> None:
    """The `lessonloop` command. Whatever command raised it, a user's error (ours, the
    memory's, a bad LESSONLOOP_* value, a file or directory the system refuses) is one line on
    stderr and exit code 2; anything else is a bug and keeps its traceback."""
    try:
        app()
    except BrokenPipeError:  # `lessonloop ... | head`: the reader left, nothing to say
        sys.stderr.close()
        raise SystemExit(1) from None
    except (*USER_ERRORS, OSError) as exc:
        if isinstance(exc, OSError) and exc.filename is None and exc.errno not in _FULL:
            raise  # not a path the user gave (a leak, a limit): a bug keeps its traceback
        err.print(Text("error: ", style="red") + Text(user_error(exc)))
        raise SystemExit(2) from exc


def user_error(exc: BaseException) -> str:
    """A user's error as the one line `main` prints (a bad setting: `invalid_settings`)."""
    if isinstance(exc, ValidationError):
        return invalid_settings(exc)
    return str(exc) or type(exc).__name__
