"""`lessonloop memory ...`: keep the derived vector index in step with SQL.

Also what the lesson commands (agent/app/cli_lessons.py) share: `--memory`, `--json`, opening
and closing the store, error-to-exit-code mapping, progress bars, lesson rendering.
Parses, calls the public API, prints.

Exit codes: 0 done; 1 the request could not be done as asked (unknown id, refused change,
bad lines in an import, drift found by `check` without `--repair`); 2 the store could not be
opened or failed (configuration, backend), or the command line itself was wrong.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from agent.app.session import open_memory
from agent.app.settings import Settings, invalid_settings
from memory import LessonMemoryError, Memory, MemoryUsageError
from memory.types import DriftReport, Lesson, LessonFilter

# Lesson texts come from logs and may hold "[...]": never let rich read them as markup.
out = Console(markup=False, highlight=False)
# soft_wrap: an error message is one line a script can grep, not hard-wrapped at 80.
err = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

MemoryOption = Annotated[
    str | None,
    typer.Option(
        "--memory",
        metavar="PATH|URL",
        help="Store: a directory, an .sqlite3 file or an SQLAlchemy URL "
        "(default: $LESSONLOOP_MEMORY, else ~/.lessonloop/memory).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON on stdout instead.")
]
Tick = Callable[..., None]  # tick(done) or tick(done, total)


@dataclass(frozen=True)
class StoreChoice:
    """What the group's `--memory` said; read by every command of the group."""

    memory: str | None


def remember_store(ctx: typer.Context, memory: str | None) -> None:
    """Group callback body: keep `--memory` for the command that runs next."""
    ctx.obj = StoreChoice(memory)


def fail(message: str, code: int) -> NoReturn:
    """Print an error on stderr and exit with `code`."""
    err.print(Text("error: ", style="bold red") + Text(message))
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    """JSON on stdout, nothing else on it (no rich markup, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@contextmanager
def open_store(
    ctx: typer.Context,
    given: str | None = None,
    *,
    existing: bool = True,
    reembed: bool = False,
    warn_lag: bool = True,
) -> Iterator[Memory]:
    """The configured store, closed afterwards; memory errors become exit codes. `given`:
    the command's own `--memory` (after its name: `lessons list --memory X`), else the
    group's; given in both places, the two must agree.
    `existing=False` for a command that may start a store (`lessons import`); `reembed`
    converts a store built with another embedder (`session.open_memory`). A store whose
    index lags SQL (a crash mid-write, a lost index directory) is said so on stderr, unless
    `warn_lag` is off (the commands that check and repair it)."""
    choice = ctx.find_object(StoreChoice)
    group = choice.memory if choice else None
    if given is not None and group not in (None, given):
        fail(f"--memory given twice: {group} and {given}", 2)
    try:
        settings = Settings.from_env(memory=group if given is None else given)
    except ValidationError as exc:
        fail(invalid_settings(exc), 2)
    try:
        memory = open_memory(settings, existing=existing, reembed=reembed)
    except LessonMemoryError as exc:
        fail(f"cannot open the memory store: {exc}", 2)
    try:
        if warn_lag:
            _warn_lag(memory)
        yield memory
    except MemoryUsageError as exc:  # unknown id, refused transition, foreign import file
        fail(str(exc), 1)
    except LessonMemoryError as exc:
        fail(str(exc), 2)
    finally:
        memory.close()


def _warn_lag(memory: Memory) -> None:
    try:
        pending, unindexed = memory.index_lag()
    except LessonMemoryError:
        return  # an index that cannot be counted fails the command where it is used
    if pending or unindexed:
        what = [f"{pending:,} written but never indexed"] if pending else []
        what += [f"{unindexed:,} more lessons than index entries"] if unindexed else []
        err.print(
            Text(
                f"warning: the vector index lags SQL ({'; '.join(what)}; a write may also be "
                "in flight): searches can miss lessons until `lessonloop memory check --repair`",
                style="yellow",
            )
        )


@contextmanager
def progress_bar(label: str, total: int | None = None, *, enabled: bool = True) -> Iterator[Tick]:
    """A transient progress bar on stderr; yields `tick(done, total=None)`."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err, transient=True, disable=not enabled) as bar:
        task = bar.add_task(label, total=total)

        def tick(done: int, new_total: int | None = None) -> None:
            bar.update(task, completed=done, total=new_total if new_total is not None else total)

        yield tick


# -- lesson rendering shared by the commands (timestamps in UTC) -----------------------

_STATUS_STYLE = {"candidate": "", "validated": "green", "deprecated": "dim", "merged": "cyan"}


def when(value: datetime | None) -> str:
    """A timestamp as UTC minutes, "-" when there is none."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else "-"


def status_text(status: str) -> Text:
    """A status, coloured."""
    return Text(status, style=_STATUS_STYLE.get(status, ""))


def print_lesson_line(lesson: Lesson, prefix: str = "") -> None:
    """A lesson in two lines: id, status and counters; then its symptom's first line.

    Lines, not a table: a full id must survive any terminal width (people copy it).
    """
    x = lesson
    counters = f"seen {x.seen} rec {x.recalled} helped {x.helped} misled {x.misled}"
    head = Text(prefix) + Text(x.id, style="bold") + Text("  ") + status_text(x.status)
    head += Text(f"  {x.error_type}  scope {x.scope}  {counters}  {when(x.created_at)}")
    out.print(head)
    symptom = next((line for line in x.symptom.splitlines() if line.strip()), "-")
    out.print(Text("    " + symptom, style="dim"), no_wrap=True, overflow="ellipsis")


def print_lesson(lesson: Lesson) -> None:
    """Every field of a lesson, texts in full."""
    out.print(Text(lesson.id, style="bold") + Text("  ") + status_text(lesson.status))
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    counters = (
        f"seen {lesson.seen}, recalled {lesson.recalled}, "
        f"helped {lesson.helped}, misled {lesson.misled}"
    )
    rows = (
        ("scope", lesson.scope),
        ("error type", lesson.error_type),
        ("counters", counters),
        ("created", when(lesson.created_at) + " UTC"),
        ("updated", when(lesson.updated_at) + " UTC"),
        ("embedding", lesson.embedding_model or "-"),
        ("merged into", lesson.merged_into or "-"),
        ("merged from", ", ".join(lesson.merged_from) or "-"),
    )
    for key, value in rows:
        facts.add_row(key, value)
    out.print(facts)
    sections = (
        ("symptom", lesson.symptom),
        ("root cause", lesson.root_cause),
        ("fix", lesson.fix),
        ("applies when", lesson.applies_when),
    )
    for title, body in sections:
        out.print(Text(f"\n{title}", style="bold"))
        out.print(Text(body or "-"))
    out.print(Text(f"\nevidence ({len(lesson.evidence)})", style="bold"))
    for e in lesson.evidence:
        out.print(
            Text(f"run {e.run_id}", style="cyan") + Text(f": {e.excerpt}" if e.excerpt else "")
        )


memory_app = typer.Typer(no_args_is_help=True, add_completion=False)


@memory_app.callback()
def _memory(ctx: typer.Context, memory: MemoryOption = None) -> None:
    """Maintain the store: SQL is the truth, the vector index is derived from it."""
    remember_store(ctx, memory)


@memory_app.command()
def reindex(
    ctx: typer.Context,
    reembed: Annotated[
        bool,
        typer.Option(
            "--reembed",
            help="Convert a store built with another embedder to LESSONLOOP_EMBEDDER's "
            "(dedup vectors too).",
        ),
    ] = False,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Rebuild the vector index from SQL (embeds every lesson again)."""
    with (
        open_store(ctx, store, reembed=reembed, warn_lag=False) as memory,
        progress_bar("reindexing", enabled=not as_json) as tick,
    ):
        if memory.reembedded_on_open:  # converted as it opened: nothing left to do
            count = memory.list_lessons(LessonFilter(limit=1)).total
        else:
            count = memory.reindex(reembed=reembed, progress=tick)
    if as_json:
        print_json({"indexed": count})
    else:
        out.print(f"reindexed {count:,} lessons")


@memory_app.command()
def check(
    ctx: typer.Context,
    repair: Annotated[bool, typer.Option("--repair", help="Make the index match SQL.")] = False,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Compare SQL with the vector index. Exits 1 on drift that was not repaired."""
    with open_store(ctx, store, warn_lag=False) as memory:
        report = memory.check(repair=repair)
    if as_json:
        print_json({**report.model_dump(mode="json"), "clean": report.clean})
    else:
        _print_drift(report)
    if not report.clean and not report.repaired:
        raise typer.Exit(1)


_DRIFT = (
    ("pending", "written to SQL, never indexed"),
    ("missing_in_index", "marked indexed, absent from the index"),
    ("orphans_in_index", "in the index, not in SQL"),
    ("metadata_drift", "index metadata differs from SQL"),
)


def _print_drift(report: DriftReport) -> None:
    if report.clean:
        out.print("clean: the vector index matches SQL")
        return
    table = Table(title="drift between SQL and the vector index")
    for name in ("kind", "meaning", "count", "lesson ids"):
        table.add_column(name)
    for key, meaning in _DRIFT:
        ids: tuple[str, ...] = getattr(report, key)
        if ids:
            more = f" ... +{len(ids) - 5:,} more" if len(ids) > 5 else ""
            table.add_row(key, meaning, f"{len(ids):,}", ", ".join(ids[:5]) + more)
    out.print(table)
    if report.repaired:
        out.print(Text("repaired: the index now follows SQL", style="green"))
    else:
        out.print(Text("not repaired: run `lessonloop memory check --repair`", style="yellow"))
