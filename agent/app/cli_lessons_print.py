"""How `lessonloop lessons` prints a lesson's uses and lift, and an import's outcome."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from agent.app.cli_memory import out, print_json, when
from memory import LessonLift, export, seed
from memory.types import LessonUse


def print_uses(uses: list[LessonUse]) -> None:
    out.print(Text(f"\nuses ({len(uses)})", style="bold"))
    if not uses:
        out.print("never handed to a run")
        return
    table = Table()
    for name in ("when (UTC)", "run", "stage", "outcome"):
        table.add_column(name)
    for u in uses:
        table.add_row(when(u.created_at), u.run_id, u.stage, u.outcome)
    out.print(table)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_lift(lift: LessonLift | None) -> None:
    out.print(Text("\nlift", style="bold"))
    if lift is None or lift.n == 0:
        out.print("no finished run was given this lesson yet")
        return
    out.print(
        f"with it: {lift.passed}/{lift.n} passed ({_rate(lift.rate)}, 95% CI "
        f"{lift.low:.2f}-{lift.high:.2f}), mean rounds {_rate(lift.rounds_with)}\n"
        f"baseline ({lift.baseline_kind}): {lift.baseline_passed}/{lift.baseline_n} passed "
        f"({_rate(lift.baseline_rate)}), mean rounds {_rate(lift.rounds_without)}\n"
        f"lift: {'-' if lift.lift is None else f'{lift.lift:+.2f}'}"
    )


def print_seed(report: seed.SeedReport, as_json: bool) -> None:
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    out.print(
        f"seeded {report.count('created'):,} new lessons, "
        f"{report.count('merged_duplicate'):,} folded into stored ones, "
        f"{report.count('rejected_recall_loop'):,} refused, bad lines {report.count('error'):,}"
    )
    for line in report.lines:
        if line.action == "error":
            out.print(Text(f"line {line.line}: ", style="red") + Text(line.message))


def print_import(report: export.ImportReport) -> None:
    out.print(
        f"imported {len(report.imported):,}, replaced {len(report.replaced):,}, "
        f"skipped {len(report.skipped):,}, bad lines {len(report.errors):,}"
    )
    if report.skipped:
        out.print(f"skipped ids are already stored (--replace overwrites): {_ids(report.skipped)}")
    for e in report.errors:
        out.print(Text(f"line {e.line}: ", style="red") + Text(e.message))
    if report.dangling_links:
        out.print(
            Text("merge links to lessons in neither the file nor the store: ", style="yellow")
            + Text(_ids(report.dangling_links))
        )


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids[:10]) + (f" ... +{len(ids) - 10:,} more" if len(ids) > 10 else "")
