"""`lessonloop lessons ...`: inspect, search, export and curate what the agent learned.

Parses, calls the public memory API (`Memory`, `memory.export`, `memory.curate`,
`memory.lift`), prints with rich or, with `--json`, as JSON. No logic here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from agent.app.cli_lessons_print import print_import, print_lift, print_seed, print_uses
from agent.app.cli_memory import (
    JsonOption,
    MemoryOption,
    fail,
    open_store,
    out,
    print_json,
    print_lesson,
    print_lesson_line,
    progress_bar,
    remember_store,
    status_text,
)
from memory import Memory, curate, export, seed
from memory.seedgate import why_nothing
from memory.types import (
    SCOPE_MAX_CHARS,
    Lesson,
    LessonFilter,
    LessonQuery,
    LessonSort,
    Page,
)

# A person searching wants every similar lesson up to --limit, not the prompt's token budget.
_SEARCH_BUDGET = 10_000_000
_SEARCH_POOL = 50  # LessonQuery.limit allows at most 50
MIN_SIMILARITY_HINT = "; --min-similarity 0 lifts them and shows the nearest lessons"


class StatusChoice(StrEnum):
    """`--status` values (memory.types.LessonStatus; typer needs an Enum for a repeatable)."""

    candidate = "candidate"
    validated = "validated"
    deprecated = "deprecated"
    merged = "merged"


lessons_app = typer.Typer(no_args_is_help=True, add_completion=False)

LessonId = Annotated[str, typer.Argument(help="Lesson id, e.g. les_1f0c2a9b3d4e5f60.")]
ScopeOption = Annotated[str | None, typer.Option("--scope", help="Only this scope.")]


@lessons_app.callback()
def _lessons(ctx: typer.Context, memory: MemoryOption = None) -> None:
    """Inspect, search, export and curate the lessons the agent learned."""
    remember_store(ctx, memory)


def _next_offset(page: Page[Lesson]) -> int | None:
    end = page.offset + len(page.items)
    return end if end < page.total else None


@lessons_app.command("list")
def list_lessons(
    ctx: typer.Context,
    scope: ScopeOption = None,
    error_type: Annotated[
        str | None, typer.Option("--error-type", help="Only this error type.")
    ] = None,
    status: Annotated[
        list[StatusChoice] | None, typer.Option("--status", help="Repeat for several.")
    ] = None,
    sort: Annotated[LessonSort, typer.Option("--sort", help="Field to order by.")] = "created_at",
    descending: Annotated[bool, typer.Option("--desc/--asc")] = True,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 50,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """List lessons, one page at a time, with the total that matched."""
    where = LessonFilter(
        scope=scope,
        error_type=error_type,
        status=tuple(s.value for s in status or ()),
        sort=sort,
        descending=descending,
        offset=offset,
        limit=limit,
    )
    with open_store(ctx, store) as memory:
        page = memory.list_lessons(where)
    following = _next_offset(page)
    if as_json:
        print_json({**page.model_dump(mode="json"), "next_offset": following})
        return
    if page.items:
        for lesson in page.items:
            print_lesson_line(lesson)
        shown = f"showing {page.offset + 1:,}-{page.offset + len(page.items):,} of {page.total:,}"
        out.print(shown + (f"; next: --offset {following}" if following is not None else ""))
    elif page.total:
        out.print(f"offset {page.offset:,} is past the end: {page.total:,} lessons match")
    else:
        out.print("no lessons match")


@lessons_app.command()
def show(
    ctx: typer.Context,
    lesson_id: LessonId,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """One lesson in full: fields, evidence, merge links, use history, lift."""
    with open_store(ctx, store) as memory:
        lesson = memory.get(lesson_id)
        uses = memory.uses(lesson_id)
        lifts = memory.lesson_lift([lesson_id])
    lift = lifts[0] if lifts else None
    if as_json:
        print_json(
            {
                "lesson": lesson.model_dump(mode="json"),
                "uses": [u.model_dump(mode="json") for u in uses],
                "lift": lift.model_dump(mode="json") if lift else None,
            }
        )
        return
    print_lesson(lesson)
    print_uses(uses)
    print_lift(lift)


@lessons_app.command()
def search(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What happened, e.g. an error message.")],
    scope: Annotated[str, typer.Option("--scope")] = "default",
    include_global: Annotated[
        bool, typer.Option("--global", help="Also search the shared 'global' scope.")
    ] = False,
    error_type: Annotated[
        list[str] | None,
        typer.Option("--error-type", help="Only lessons of this error type (repeatable)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=_SEARCH_POOL)] = 10,
    min_similarity: Annotated[
        float | None, typer.Option("--min-similarity", min=-1.0, max=1.0)
    ] = None,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Recall lessons by meaning, as the agent would (candidate and validated ones only)."""
    types = tuple(error_type or ())
    query = LessonQuery(
        text=text,
        scope=scope,
        include_global=include_global,
        error_types=types,
        # Recall treats error types as a gate (answer only if one of them matches), then
        # ranks every type; a person asking for a type wants only that type: ask for the
        # whole pool and filter.
        limit=_SEARCH_POOL if types else limit,
        min_similarity=min_similarity,
        token_budget=_SEARCH_BUDGET,
    )
    with open_store(ctx, store) as memory:
        hits = memory.recall(query)
        if types:
            hits = [h for h in hits if h.lesson.error_type in types][:limit]
        config = memory.recall_config
    if as_json:
        print_json([h.model_dump(mode="json") for h in hits])
        return
    if not hits:
        lift = "" if query.min_similarity is not None else MIN_SIMILARITY_HINT
        out.print(why_nothing(query, config) + lift)
        return
    for rank, hit in enumerate(hits, start=1):
        print_lesson_line(hit.lesson, f"{rank:>2}. {hit.similarity:.3f} (score {hit.score:.3f})  ")


@lessons_app.command("export")
def export_cmd(
    ctx: typer.Context,
    out_file: Annotated[
        Path | None, typer.Option("--out", dir_okay=False, help="File to write (default: stdout).")
    ] = None,
    scope: ScopeOption = None,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Export lessons as JSONL (format lessonloop.lessons v1, documented in memory/export.py).

    Without --out the export itself goes to stdout; --json then adds nothing.
    """
    with open_store(ctx, store) as memory:
        if out_file is None:
            count = export.export_lessons(memory, sys.stdout, scope=scope)
        else:
            count = export.export_to_file(memory, out_file, scope=scope)
    where = str(out_file) if out_file else "stdout"
    if as_json and out_file is not None:
        info = {"path": where, "lessons": count, "format": export.FORMAT}
        print_json({**info, "version": export.VERSION})
    elif not as_json:
        # On stderr: without --out, stdout carries the export itself.
        summary = f"exported {count:,} lessons to {where} ({export.FORMAT} v{export.VERSION})"
        typer.echo(summary, err=True)


@lessons_app.command("import")
def import_cmd(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True)],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite lessons whose id is already stored.")
    ] = False,
    scope: Annotated[
        str | None,
        typer.Option("--scope", help="Scope of seed records that name none (default: default)."),
    ] = None,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Import lessons: an export (restored exactly) or plain records (seeded: redaction, dedup).

    A file whose first line is the export header is a restore; any other JSONL file holds
    seed records {error_type, symptom, root_cause, fix, applies_when?, scope?, status?}.
    Exits 1 if any line was bad (the good ones are imported).
    """
    try:
        # utf-8-sig: an export saved by an editor that adds a byte order mark is still one.
        with file.open(encoding="utf-8-sig") as lines:
            numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        nonblank = [line for _, line in numbered]
        restore = bool(nonblank) and export.is_header(nonblank[0])
        if restore:  # a header this version refuses is refused before a store is made
            try:
                export.check_header(*numbered[0])
            except export.ImportFormatError as exc:
                fail(str(exc), 1)
        if replace and not restore:  # refused before a store is made, like a bad header
            fail(
                f"--replace overwrites lessons by id from an export, and {file} has no "
                f"{export.FORMAT} header: seed records are imported without --replace",
                2,
            )
        if restore and scope is not None:
            fail("--scope applies to seed records: an export restores each lesson in its scope", 2)
        if scope is not None and not 0 < len(scope.strip()) <= SCOPE_MAX_CHARS:
            fail(f"--scope must be 1 to {SCOPE_MAX_CHARS} characters, not blank", 2)
        with (
            open_store(ctx, store, existing=False) as memory,
            file.open(encoding="utf-8-sig") as lines,
            progress_bar("importing", max(len(nonblank) - restore, 0), enabled=not as_json) as tick,
        ):
            if restore or replace:
                report = export.import_lessons(memory, lines, replace=replace, progress=tick)
            else:
                seeded = seed.seed_lessons(memory, lines, scope=scope or "default", progress=tick)
    except UnicodeDecodeError as exc:
        fail(f"{file} is not UTF-8 text: {exc}", 1)
    if not (restore or replace):
        print_seed(seeded, as_json)
        if not seeded.ok:
            raise typer.Exit(1)
        return
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        print_import(report)
    if not report.ok:
        raise typer.Exit(1)


@lessons_app.command()
def stats(
    ctx: typer.Context,
    top: Annotated[int, typer.Option("--top", min=1, max=100)] = 5,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Counts by status and error type, the most helpful and the never-used lessons."""
    with open_store(ctx, store) as memory:
        summary = curate.lesson_stats(memory, top=top)
    if as_json:
        print_json(summary.model_dump(mode="json"))
        return
    by_status = ", ".join(f"{k} {v:,}" for k, v in summary.by_status.items())
    out.print(f"{summary.total:,} lessons: {by_status}")
    table = Table(title="by error type")
    table.add_column("error type")
    for name in (*summary.by_status, "total"):
        table.add_column(name, justify="right")
    for error_type, counts in summary.by_error_type.items():
        cells = [f"{n:,}" for n in counts.values()]
        table.add_row(error_type, *cells, f"{sum(counts.values()):,}")
    out.print(table)
    out.print(Text("\nmost helpful (runs that passed after using it)", style="bold"))
    for lesson in summary.most_helpful:
        print_lesson_line(lesson)
    if not summary.most_helpful:
        out.print("no lesson has helped a passing run yet")
    heading = f"\nnever handed to a run: {summary.never_used:,} active lessons; oldest first"
    out.print(Text(heading, style="bold"))
    for lesson in summary.never_used_oldest:
        print_lesson_line(lesson)


@lessons_app.command()
def edit(
    ctx: typer.Context,
    lesson_id: LessonId,
    symptom: Annotated[str | None, typer.Option("--symptom")] = None,
    root_cause: Annotated[str | None, typer.Option("--root-cause")] = None,
    fix: Annotated[str | None, typer.Option("--fix")] = None,
    applies_when: Annotated[str | None, typer.Option("--applies-when")] = None,
    scope: Annotated[str | None, typer.Option("--scope")] = None,
    error_type: Annotated[str | None, typer.Option("--error-type")] = None,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """Change a lesson's text; it is redacted, re-embedded and re-indexed."""
    changes = {
        "symptom": symptom,
        "root_cause": root_cause,
        "fix": fix,
        "applies_when": applies_when,
        "scope": scope,
        "error_type": error_type,
    }
    if all(v is None for v in changes.values()):
        fail(
            "nothing to change: give --symptom, --root-cause, --fix, --applies-when, "
            "--scope or --error-type",
            2,
        )
    with open_store(ctx, store) as memory:
        lesson = memory.update(lesson_id, **changes)
    if as_json:
        print_json(lesson.model_dump(mode="json"))
    else:
        print_lesson(lesson)


def _set_status(
    ctx: typer.Context,
    store: str | None,
    lesson_id: str,
    as_json: bool,
    change: Callable[[Memory, str], Lesson],
) -> None:
    with open_store(ctx, store) as memory:
        lesson = change(memory, lesson_id)
    if as_json:
        print_json(lesson.model_dump(mode="json"))
    else:
        out.print(Text(f"{lesson.id} is now ") + status_text(lesson.status))


@lessons_app.command()
def approve(
    ctx: typer.Context,
    lesson_id: LessonId,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """candidate -> validated (recall ranks validated lessons a little higher)."""
    _set_status(ctx, store, lesson_id, as_json, curate.approve)


@lessons_app.command()
def deprecate(
    ctx: typer.Context,
    lesson_id: LessonId,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """candidate or validated -> deprecated: never recalled again, kept for the record."""
    _set_status(ctx, store, lesson_id, as_json, curate.deprecate)


@lessons_app.command()
def restore(
    ctx: typer.Context,
    lesson_id: LessonId,
    as_json: JsonOption = False,
    store: MemoryOption = None,
) -> None:
    """deprecated -> candidate: recalled again (e.g. a run learned it again: `lessonloop
    review` lists those). Clears the lesson's review flag: the decision is made."""
    _set_status(ctx, store, lesson_id, as_json, _restore)


def _restore(memory: Memory, lesson_id: str) -> Lesson:
    lesson = curate.restore(memory, lesson_id)
    memory.clear_review_flag(lesson_id)
    return lesson
