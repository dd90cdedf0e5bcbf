"""`lessonloop consolidate` and `lessonloop review`: parse, call the public API, print.

Mount with `app.add_typer(retro_app)` or `app.command()(consolidate_cmd)`; see `retro_app`.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent.app.cli_memory import MemoryOption
from agent.app.session import open_memory
from agent.app.settings import Settings
from agent.app.worker import parse_duration, run_periodic, stop_on_signals
from agent.errors import LessonloopError
from agent.llm.base import LLM
from agent.llm.resolve import resolve_llm
from memory import LessonLift, Memory, curate
from memory.embeddings import Embedder
from memory.errors import LessonMemoryError
from retrospectives.consolidate import ConsolidationConfig, ConsolidationReport, Consolidator
from retrospectives.lift import PolicyChanges, apply_lift

retro_app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
out = Console()
err = Console(stderr=True, soft_wrap=True)


def _embedder(ctx: typer.Context) -> Embedder | None:
    # Tests (and embedding apps) inject another embedder through the typer context object.
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}
    found = obj.get("embedder")
    return found if isinstance(found, Embedder) else None


def _llm(settings: Settings, use_model: bool) -> LLM | None:
    return resolve_llm(settings.teacher_model, settings) if use_model else None


class ConsolidationRun(ConsolidationReport):
    """`consolidate --json`: the pass, and what the lift policy applied after it changed."""

    lift_policy: PolicyChanges


def _print_report(report: ConsolidationRun) -> None:
    out.print(
        f"[bold]consolidation[/] {'full' if report.full else 'incremental'}: "
        f"{report.new_lessons} new lessons in {report.buckets} buckets -> "
        f"{len(report.merges)} merges ({report.conflicts} conflicts, {report.fallbacks} "
        f"without the model, {report.judged} uncertain pairs judged)"
        f"{' [yellow]stopped early[/]' if report.stopped_early else ''}"
    )
    out.print(
        f"[dim]embed {report.seconds_embed:.2f}s, cluster {report.seconds_cluster:.2f}s, "
        f"write {report.seconds_write:.2f}s[/]"
    )
    for merge in report.merges:
        out.print(
            f"  {merge.id}: {len(merge.member_ids)} -> {merge.canonical_id} ({merge.written_by})"
        )
    out.print(f"lift policy: {report.lift_policy.line()}")


@retro_app.command("consolidate")
def consolidate_cmd(
    ctx: typer.Context,
    every: Annotated[str | None, typer.Option("--every", help="Run periodically, e.g. 10m")] = None,
    undo_id: Annotated[str | None, typer.Option("--undo", help="Undo the merge MERGE_ID")] = None,
    full: Annotated[bool, typer.Option("--full", help="Re-cluster every lesson")] = False,
    use_model: Annotated[
        bool, typer.Option("--model/--no-model", help="Model writes canonicals")
    ] = True,
    judge: Annotated[
        bool, typer.Option("--judge/--no-judge", help="Model checks uncertain pairs")
    ] = False,
    memory: MemoryOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Merge lessons that share a root cause (reversible: --undo MERGE_ID), then apply the
    lift policy (validate lessons that helped, flag ones that misled, decay ones unused for
    90 days) and say what it changed."""
    try:
        settings = Settings.from_env(memory=memory)
        with open_memory(settings, _embedder(ctx), existing=True) as store:
            if undo_id is not None:
                record = Consolidator(store, llm=None).undo(undo_id)
                if as_json:
                    sys.stdout.write(record.model_dump_json(indent=2) + "\n")
                else:
                    out.print(f"undone {record.id}: {len(record.member_ids)} lessons restored")
                return
            consolidator = Consolidator(
                store,
                llm=_llm(settings, use_model),
                config=ConsolidationConfig(full=full, judge_uncertain=judge),
            )

            def show(report: ConsolidationReport) -> None:
                # The periodic job also validates, flags and decays, and says so.
                run = ConsolidationRun(**dict(report), lift_policy=apply_lift(store).changes())
                if as_json:
                    sys.stdout.write(run.model_dump_json(indent=2) + "\n")
                else:
                    _print_report(run)

            if every is None:
                show(consolidator.run())
                return
            stop = threading.Event()
            with stop_on_signals(stop):
                run_periodic(
                    consolidator,
                    parse_duration(every),
                    stop,
                    on_report=show,
                    on_busy=lambda e: err.print(f"[yellow]busy:[/] {e}"),
                )
    except (LessonloopError, LessonMemoryError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


@retro_app.command("review")
def review_cmd(
    ctx: typer.Context,
    keep: Annotated[list[str] | None, typer.Option("--keep", help="Clear the flag of ID")] = None,
    deprecate: Annotated[list[str] | None, typer.Option("--deprecate", help="Deprecate ID")] = None,
    validate: Annotated[list[str] | None, typer.Option("--validate", help="Validate ID")] = None,
    restore: Annotated[
        list[str] | None, typer.Option("--restore", help="Restore deprecated ID")
    ] = None,
    apply_policy: Annotated[
        bool,
        typer.Option(
            "--apply-policy",
            help="First apply the lift policy, as each consolidation does: validate lessons "
            "that helped, flag ones that misled, decay ones unused for 90 days",
        ),
    ] = False,
    memory: MemoryOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Lessons flagged for review (recalled into failing runs, or a deprecated lesson a
    run learned again), with their lift. Changes nothing but what it is told to."""
    # Restore first, so that `--restore X --validate X` restores, then approves.
    decisions = (
        (keep, None),
        (restore, _restore),
        (validate, _validate),
        (deprecate, _deprecate),
    )
    done: list[str] = []
    try:
        with open_memory(Settings.from_env(memory=memory), _embedder(ctx), existing=True) as store:
            changes = apply_lift(store).changes() if apply_policy else None
            # Status changes follow the curation rules (`memory.curate`), as everywhere.
            for ids, change in decisions:
                for lesson_id in ids or ():
                    if change is not None:
                        change(store, lesson_id)
                    else:
                        store.get(lesson_id)  # --keep of an unknown id is an error too
                    store.clear_review_flag(lesson_id)
                    done.append(lesson_id)
            open_flags = store.review_flags()
            flag_ids = [f.lesson_id for f in open_flags]
            lifts = {s.lesson_id: s for s in store.lesson_lift(flag_ids)} if flag_ids else {}
    except (LessonloopError, LessonMemoryError) as exc:
        err.print(f"[red]error:[/] {exc}")
        if done:
            err.print(f"decided before the error (kept): {', '.join(done)}")
        raise typer.Exit(2) from exc
    if as_json:
        rows = [
            {**f.model_dump(mode="json"), "lift": _lift_json(lifts.get(f.lesson_id))}
            for f in open_flags
        ]
        sys.stdout.write(
            json.dumps(
                {"flagged": rows, "lift_policy": None if changes is None else changes.model_dump()},
                indent=2,
            )
            + "\n"
        )
        return
    if changes is not None:
        out.print(f"lift policy applied: {changes.line()}")
    table = Table(title=f"{len(open_flags)} lesson(s) flagged for review")
    # Whole ids (they are what --keep, --deprecate, ... take); the reason wraps instead.
    table.add_column("lesson", no_wrap=True, min_width=max((len(i) for i in flag_ids), default=6))
    for column in ("n", "pass rate [95% CI]", "baseline", "reason"):
        table.add_column(column)
    for f in open_flags:
        s = lifts.get(f.lesson_id)
        rate = f"{s.passed}/{s.n} [{s.low:.2f}, {s.high:.2f}]" if s else "-"
        base = f"{s.baseline_passed}/{s.baseline_n} ({s.baseline_kind})" if s else "-"
        table.add_row(f.lesson_id, str(s.n if s else 0), rate, base, f.reason)
    out.print(table)


# Each decision accepts a lesson already in its target status (the flag is still cleared:
# confirming a status is an answer too); other refusals are the curation rules'.


def _validate(memory: Memory, lesson_id: str) -> None:
    if memory.get(lesson_id).status != "validated":
        curate.approve(memory, lesson_id)


def _deprecate(memory: Memory, lesson_id: str) -> None:
    if memory.get(lesson_id).status != "deprecated":
        curate.deprecate(memory, lesson_id)


def _restore(memory: Memory, lesson_id: str) -> None:
    if memory.get(lesson_id).status != "candidate":
        curate.restore(memory, lesson_id)


def _lift_json(s: LessonLift | None) -> dict[str, object] | None:
    return s.model_dump(mode="json") if s else None
