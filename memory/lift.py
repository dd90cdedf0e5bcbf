"""Lesson lift: does recalling a lesson go with passing runs, compared with runs without it?

Per lesson, from settled `lesson_uses` and finished `runs`:
- n, passed: finished runs that were given the lesson, and how many passed;
- a Wilson 95 % interval on that pass rate (honest for small n: 1/1 is [0.21, 1.0]);
- the baseline: finished runs of the same scope that met the same error type (they
  recalled or wrote a lesson of that type) but were not given this lesson; if there are
  none, every finished run of the scope without it (`baseline_kind="scope"`). A "global"
  lesson applies in every scope: its baseline scopes are "global" and the scopes of the
  runs it was given to. A run of another scope that was given a lesson (the Python API
  allows it) counts in the lesson's n, never against a baseline it is not part of;
- lift = pass rate - baseline pass rate, and mean rounds with and without.

Baselines are computed once per (scope, error type) and the lesson's own runs subtracted,
so the cost is O(runs + uses), not O(lessons x runs).

Review flags live in `lesson_reviews`. What recall reads to push flagged lessons down: the
`helped`/`misled` counters (already in its lift term) and `flagged_ids()`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from sqlmodel import col, select

from memory.db import Database
from memory.schema import LessonRow, LessonUseRow, ReviewRow, RunRow, aware
from memory.types import GLOBAL_SCOPE, LessonStatus, utcnow

BaselineKind = Literal["error_type", "scope", "none"]
# Up to this many ids are looked up by key (one IN list); more are read in one scan.
_FEW = 2000


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when n == 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class LessonLift(BaseModel):
    """The lift statistics of one lesson (n is always shown: small n means little)."""

    model_config = ConfigDict(frozen=True)

    lesson_id: str
    scope: str
    error_type: str
    status: LessonStatus
    n: int
    passed: int
    rate: float | None
    low: float
    high: float
    baseline_kind: BaselineKind
    baseline_n: int
    baseline_passed: int
    baseline_rate: float | None
    lift: float | None
    rounds_with: float | None
    rounds_without: float | None
    last_used: datetime | None
    updated_at: datetime


@dataclass
class _Agg:
    n: int = 0
    passed: int = 0
    rounds: int = 0

    def add(self, ok: bool, rounds: int, sign: int = 1) -> None:
        self.n += sign
        self.passed += sign * int(ok)
        self.rounds += sign * rounds

    def add_all(self, other: _Agg | None) -> None:
        if other is not None:
            self.n += other.n
            self.passed += other.passed
            self.rounds += other.rounds


def _rate(agg: _Agg) -> float | None:
    return agg.passed / agg.n if agg.n else None


def _mean_rounds(agg: _Agg) -> float | None:
    return agg.rounds / agg.n if agg.n else None


def lesson_lift(db: Database, lesson_ids: Sequence[str] | None = None) -> list[LessonLift]:
    """Lift of the given lessons (default: every lesson that is not merged)."""
    with db.read() as session:
        query = select(LessonRow).where(col(LessonRow.status) != "merged")
        if lesson_ids is not None:
            query = select(LessonRow).where(col(LessonRow.id).in_(list(lesson_ids)))
        lessons = session.exec(query).all()
        wanted = {row.id for row in lessons}
        use_query = select(LessonUseRow.lesson_id, LessonUseRow.run_id, LessonUseRow.created_at)
        if len(wanted) <= _FEW:  # a page of lessons: read their uses only (indexed)
            use_query = use_query.where(col(LessonUseRow.lesson_id).in_(list(wanted)))
        uses = [u for u in session.exec(use_query).all() if u[0] in wanted]
        done = {
            r.id: r
            for r in session.exec(select(RunRow).where(col(RunRow.passed).is_not(None))).all()
        }
        used_by: dict[str, set[str]] = defaultdict(set)
        for lesson_id, run_id, _ in uses:
            if run_id in done:
                used_by[lesson_id].add(run_id)
        base_scopes = {
            row.id: _baseline_scopes(row, [done[r] for r in used_by[row.id]]) for row in lessons
        }
        scopes = set().union(*base_scopes.values())
        used_in = set().union(*used_by.values())
        # The baselines come from those scopes; a lesson's own runs may be elsewhere.
        finished = {i: r for i, r in done.items() if r.scope in scopes or i in used_in}
        # Error types of the lessons finished runs met (the baselines); not every lesson's.
        met = {
            i
            for r in finished.values()
            for i in (*(r.recalled_lesson_ids or ()), *(r.written_lesson_ids or ()))
        }
        type_query = select(LessonRow.id, LessonRow.error_type)
        if len(met) <= _FEW:
            type_query = type_query.where(col(LessonRow.id).in_(list(met)))
        type_of = dict(session.exec(type_query).all())
    runs = [r for r in finished.values() if r.scope in scopes]
    last_used: dict[str, datetime] = {}
    for lesson_id, _, created in uses:
        last_used[lesson_id] = max(aware(created), last_used.get(lesson_id, aware(created)))
    run_types = {r.id: _types_met(r, type_of) for r in finished.values()}
    by_type: dict[tuple[str, str], _Agg] = defaultdict(_Agg)
    by_scope: dict[str, _Agg] = defaultdict(_Agg)
    for run in runs:
        by_scope[run.scope].add(bool(run.passed), run.rounds)
        for error_type in run_types[run.id]:
            by_type[(run.scope, error_type)].add(bool(run.passed), run.rounds)
    out = []
    for row in lessons:
        mine = [finished[r] for r in sorted(used_by.get(row.id, ()))]
        own = _Agg()
        for run in mine:
            own.add(bool(run.passed), run.rounds)
        base, kind = _baseline(row, base_scopes[row.id], mine, run_types, by_type, by_scope)
        out.append(_lift(row, own, base, kind, last_used.get(row.id)))
    return out


def _types_met(run: RunRow, type_of: dict[str, str]) -> set[str]:
    ids = [*(run.recalled_lesson_ids or ()), *(run.written_lesson_ids or ())]
    return {type_of[i] for i in ids if i in type_of}


def _baseline_scopes(row: LessonRow, mine: Sequence[RunRow]) -> frozenset[str]:
    """The scopes whose runs make `row`'s baseline (see the module docstring)."""
    if row.scope == GLOBAL_SCOPE:
        return frozenset({row.scope, *(run.scope for run in mine)})
    return frozenset({row.scope})


def _baseline(
    row: LessonRow,
    scopes: frozenset[str],
    mine: Sequence[RunRow],
    run_types: dict[str, set[str]],
    by_type: dict[tuple[str, str], _Agg],
    by_scope: dict[str, _Agg],
) -> tuple[_Agg, BaselineKind]:
    # The lesson's own runs are the treatment group: out of the totals they are part of.
    own = [run for run in mine if run.scope in scopes]
    base = _Agg()
    for scope in scopes:
        base.add_all(by_type.get((scope, row.error_type)))
    for run in own:
        if row.error_type in run_types[run.id]:
            base.add(bool(run.passed), run.rounds, sign=-1)
    if base.n > 0:
        return base, "error_type"
    base = _Agg()
    for scope in scopes:
        base.add_all(by_scope.get(scope))
    for run in own:
        base.add(bool(run.passed), run.rounds, sign=-1)
    return (base, "scope") if base.n > 0 else (base, "none")


def _lift(
    row: LessonRow, own: _Agg, base: _Agg, kind: BaselineKind, last: datetime | None
) -> LessonLift:
    low, high = wilson(own.passed, own.n)
    rate, base_rate = _rate(own), _rate(base)
    return LessonLift(
        lesson_id=row.id,
        scope=row.scope,
        error_type=row.error_type,
        status=row.status,
        n=own.n,
        passed=own.passed,
        rate=rate,
        low=low,
        high=high,
        baseline_kind=kind,
        baseline_n=base.n,
        baseline_passed=base.passed,
        baseline_rate=base_rate,
        lift=rate - base_rate if rate is not None and base_rate is not None else None,
        rounds_with=_mean_rounds(own),
        rounds_without=_mean_rounds(base),
        last_used=last,
        updated_at=aware(row.updated_at),
    )


# -- review flags ------------------------------------------------------------------------


class ReviewFlag(BaseModel):
    """An open review flag."""

    model_config = ConfigDict(frozen=True)

    lesson_id: str
    reason: str
    flagged_at: datetime


def flag(db: Database, lesson_id: str, reason: str) -> bool:
    """Flag a lesson for review; False if it was flagged already."""
    with db.write() as session:
        if session.get(ReviewRow, lesson_id) is not None:
            return False
        session.add(ReviewRow(lesson_id=lesson_id, reason=reason, flagged_at=utcnow()))
        return True


def clear_flag(db: Database, lesson_id: str) -> bool:
    """Remove a review flag (a person decided); False if there was none."""
    with db.write() as session:
        row = session.get(ReviewRow, lesson_id)
        if row is None:
            return False
        session.delete(row)
        return True


def flags(db: Database) -> list[ReviewFlag]:
    """Open review flags, oldest first."""
    with db.read() as session:
        rows = session.exec(select(ReviewRow).order_by(col(ReviewRow.flagged_at))).all()
        return [
            ReviewFlag(lesson_id=r.lesson_id, reason=r.reason, flagged_at=aware(r.flagged_at))
            for r in rows
        ]


def flagged_ids(db: Database, lesson_ids: Iterable[str]) -> set[str]:
    """Which of `lesson_ids` are flagged (what recall reads to rank them down)."""
    ids = list(lesson_ids)
    if not ids:
        return set()
    with db.read() as session:
        return set(
            session.exec(select(ReviewRow.lesson_id).where(col(ReviewRow.lesson_id).in_(ids))).all()
        )
