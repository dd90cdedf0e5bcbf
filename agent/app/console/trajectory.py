"""A run's trajectory round by round, for the run page: what changed, what the checks said.

Reads the `trajectory.json` a run directory keeps (`agent.result.RunResult`); pure functions.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.result import PoolEntry, RunResult

_MAX_DIFF_LINES = 400


class FileDiff(BaseModel):
    """One output file's change from the previous round's candidate (unified diff lines)."""

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
    diffs: tuple[FileDiff, ...]  # against the previous round; the first round: whole files
    fix_note: str | None
    recalled_lesson_ids: tuple[str, ...]
    pool: tuple[PoolEntry, ...]


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


def diff_files(before: Candidate | None, after: Candidate) -> tuple[FileDiff, ...]:
    """Unified diffs of each file `after` holds (and files it dropped), vs `before`."""
    old = before.files if before is not None else {}
    diffs = []
    for name in sorted(set(old) | set(after.files)):
        a = old.get(name, "").splitlines(keepends=False)
        b = after.files.get(name, "").splitlines(keepends=False)
        if a == b:
            continue
        lines = list(
            difflib.unified_diff(a, b, f"round before/{name}", f"this round/{name}", lineterm="")
        )
        cut = len(lines) > _MAX_DIFF_LINES
        diffs.append(FileDiff(name=name, lines=tuple(lines[:_MAX_DIFF_LINES]), truncated=cut))
    return tuple(diffs)


def rounds(result: RunResult) -> tuple[RoundView, ...]:
    """The rounds of a run with the candidate diff between consecutive rounds."""
    views = []
    previous: Candidate | None = None
    for record in result.rounds:
        views.append(
            RoundView(
                round=record.round,
                action=record.action,
                tokens=record.usage.total_tokens,
                seconds=record.seconds,
                checks=record.checks,
                diffs=diff_files(previous, record.candidate),
                fix_note=record.candidate.fix_note,
                recalled_lesson_ids=record.recalled_lesson_ids,
                pool=record.pool,
            )
        )
        previous = record.candidate
    return tuple(views)
