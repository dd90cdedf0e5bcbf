"""A run's trajectory round by round, for the run page: what changed, what the checks said.

Reads the `trajectory.json` a run directory keeps (`agent.result.RunResult`); pure functions.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.result import PoolEntry, RoundRecord, RunResult

_MAX_DIFF_LINES = 400
# What a round's chosen candidate repaired when it was not that round's chosen one.
_REPAIRED = {"refine_alt": "runner-up", "refine_bare": "best drawn without lessons"}


class FileDiff(BaseModel):
    """One output file's change from the candidate its round repaired (unified diff lines)."""

    model_config = ConfigDict(frozen=True)

    name: str
    lines: tuple[str, ...]
    truncated: bool = False


class RoundView(BaseModel):
    """One round: how its candidate came about, the diff, every check, the lessons it got."""

    model_config = ConfigDict(frozen=True)

    round: int
    action: str
    tokens: int
    seconds: float
    checks: tuple[Feedback, ...]
    # Against the round it repaired (`RoundRecord.base_round`); a generation: whole files.
    diffs: tuple[FileDiff, ...]
    repairs: int | None = None
    # What the diff is from: "round 1", "round 1's runner-up" (None: a generation).
    repaired_from: str | None = None
    fix_note: str | None
    recalled_lesson_ids: tuple[str, ...]
    pool: tuple[PoolEntry, ...]


class VerifiedView(BaseModel):
    """What a pass verified (`agent.verify`): the failing candidate it repaired, the change
    that turned it into a pass with what the pass did not need taken back, and the
    failure's own fix when one was found; each a diff from the failing candidate."""

    model_config = ConfigDict(frozen=True)

    repaired: str  # "round 1", "round 1's nearest failing draw"
    failure: Feedback
    change: tuple[FileDiff, ...]
    taken_back: tuple[str, ...]
    failure_fix: tuple[FileDiff, ...]


class TrajectoryError(ValueError):
    """A run directory without a readable trajectory.json."""


def load(run_dir: Path) -> RunResult:
    """The trajectory a run directory keeps; `TrajectoryError` says why there is none."""
    path = run_dir / "trajectory.json"
    try:
        return RunResult.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TrajectoryError(f"{path} does not exist (the run ran on another machine?)") from exc
    except (OSError, UnicodeDecodeError, ValidationError) as exc:
        raise TrajectoryError(f"{path} cannot be read: {exc}") from exc


def diff_files(
    before: Candidate | None,
    after: Candidate,
    label: str = "round before",
    after_label: str = "this round",
) -> tuple[FileDiff, ...]:
    """Unified diffs of each file `after` holds (and files it dropped), vs `before`."""
    old = before.files if before is not None else {}
    diffs = []
    for name in sorted(set(old) | set(after.files)):
        a = old.get(name, "").splitlines(keepends=False)
        b = after.files.get(name, "").splitlines(keepends=False)
        if a == b:
            continue
        lines = list(
            difflib.unified_diff(a, b, f"{label}/{name}", f"{after_label}/{name}", lineterm="")
        )
        cut = len(lines) > _MAX_DIFF_LINES
        diffs.append(FileDiff(name=name, lines=tuple(lines[:_MAX_DIFF_LINES]), truncated=cut))
    return tuple(diffs)


def rounds(result: RunResult) -> tuple[RoundView, ...]:
    """The rounds of a run, each with its candidate's diff from the round it repaired (the
    loop may go back to an earlier, better round: `agent.rank.next_base`)."""
    views = []
    chosen = {record.round: record.candidate for record in result.rounds}
    for record in result.rounds:
        base = record.base_round
        before = chosen.get(base) if base is not None else None
        # Round 1 writes its files from nothing: its diff is against no file.
        label = f"round {base}" if base is not None else "nothing"
        if record.repaired is not None:  # a repair of the round's runner-up or bare line
            before, label = record.repaired.candidate, _repaired_label(record)
        views.append(
            RoundView(
                round=record.round,
                action=record.action,
                tokens=record.usage.total_tokens,
                seconds=record.seconds,
                checks=record.checks,
                diffs=diff_files(before, record.candidate, label),
                repairs=base,
                repaired_from=label if base is not None else None,
                fix_note=record.candidate.fix_note,
                recalled_lesson_ids=record.recalled_lesson_ids,
                pool=record.pool,
            )
        )
    return tuple(views)


def verified(result: RunResult) -> VerifiedView | None:
    """What the run's pass verified; None when it verified nothing (no pass, a greedy
    first-round pass, nothing to take back and no failure's fix) or the failing candidate
    is not in the trajectory."""
    if not result.passed or result.verified_base is None:
        return None
    named = [(result.first_failure, "round 1's nearest failing draw")] + [
        pair
        for r in result.rounds
        for pair in ((r.repaired, _repaired_label(r)), (r, f"round {r.round}"))
    ]
    found = [
        (attempt, label)
        for attempt, label in named
        if attempt is not None and attempt.candidate.digest() == result.verified_base
    ]
    if not found:
        return None
    base, label = found[0]
    passing = result.best
    after = passing.model_copy(update={"files": result.verified_files or passing.files})
    fix = (
        diff_files(base.candidate, Candidate(files=result.failure_fix, text=""), label, "fixed")
        if result.failure_fix is not None
        else ()
    )
    return VerifiedView(
        repaired=label,
        failure=base.feedback,
        change=diff_files(base.candidate, after, label, "the pass"),
        taken_back=result.taken_back,
        failure_fix=fix,
    )


def _repaired_label(record: RoundRecord) -> str:
    """What a round repaired when it was not a round's chosen candidate: "round 1's
    runner-up", "round 1's best drawn without lessons"."""
    which = _REPAIRED.get(record.origin or "", "other candidate")
    return f"round {record.base_round}'s {which}"
