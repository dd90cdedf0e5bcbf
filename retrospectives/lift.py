"""Lift policy: validate lessons that helped, flag ones that mislead, decay stale ones.

Lift has two halves with one owner each: the memory owns the facts (`Memory.lesson_lift`,
computed from SQL uses and run outcomes, and the review flags, `Memory.flag_for_review`);
this module owns the policy: it decides, in a pure function (`decide`), and applies the
decisions through the memory's public API, so a status change also reaches the vector index.

- validate: a candidate given to at least `validate_min_passed` finished runs that passed
  (its fix was re-executed and passed); never while it is flagged.
- flag for review: at least `flag_min_failed` failing runs and a Wilson upper bound of its
  pass rate below `flag_max_high`, i.e. confidently recalled into failures. Recall ranks
  flagged lessons down.
- decay: not used (nor refreshed by a duplicate sighting) for `stale_days`: a validated
  lesson drops to candidate, a candidate to deprecated. Merged/deprecated are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from memory import LessonLift
from memory.store import Memory
from memory.types import LessonStatus


class LiftPolicy(BaseModel):
    """Thresholds of the lift policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    validate_min_passed: int = Field(default=1, ge=1)
    flag_min_failed: int = Field(default=3, ge=1)
    flag_max_high: float = Field(default=0.6, gt=0, le=1)
    stale_days: float = Field(default=90.0, gt=0)


class Decisions(BaseModel):
    """What the policy wants done, by lesson id."""

    model_config = ConfigDict(frozen=True)

    validate_ids: tuple[str, ...] = ()
    flag: tuple[tuple[str, str], ...] = ()  # (lesson id, reason)
    demote: tuple[tuple[str, LessonStatus], ...] = ()  # (lesson id, new status)


class PolicyChanges(BaseModel):
    """What applying the policy changed, by lesson id."""

    model_config = ConfigDict(frozen=True)

    validated: tuple[str, ...] = ()
    flagged: tuple[str, ...] = ()
    decayed: tuple[str, ...] = ()

    def line(self) -> str:
        """'validated 1, flagged 0, decayed 2 (les_a, les_b)': for a person."""
        counts = f"validated {len(self.validated)}, flagged {len(self.flagged)}, decayed "
        decayed = f" ({', '.join(self.decayed)})" if self.decayed else ""
        return counts + f"{len(self.decayed)}{decayed}"


class LiftReport(PolicyChanges):
    """The statistics and what was changed."""

    lifts: tuple[LessonLift, ...]

    def changes(self) -> PolicyChanges:
        return PolicyChanges(validated=self.validated, flagged=self.flagged, decayed=self.decayed)


def decide(
    lifts: Sequence[LessonLift], policy: LiftPolicy, *, now: datetime, flagged: set[str]
) -> Decisions:
    """The policy of the module docstring, as a pure function."""
    validate: list[str] = []
    flag: list[tuple[str, str]] = []
    demote: list[tuple[str, LessonStatus]] = []
    stale_before = now - timedelta(days=policy.stale_days)
    for s in lifts:
        failed = s.n - s.passed
        bad = failed >= policy.flag_min_failed and s.high < policy.flag_max_high
        if bad and s.lesson_id not in flagged:
            reason = (
                f"recalled in {failed} failing of {s.n} runs "
                f"(pass rate {s.passed}/{s.n}, 95% upper bound {s.high:.2f})"
            )
            flag.append((s.lesson_id, reason))
        elif (
            s.status == "candidate"
            and s.passed >= policy.validate_min_passed
            and not bad
            and s.lesson_id not in flagged
        ):
            validate.append(s.lesson_id)
            continue
        last = max(s.updated_at, s.last_used) if s.last_used else s.updated_at
        if last < stale_before and s.status in ("validated", "candidate"):
            demote.append((s.lesson_id, "candidate" if s.status == "validated" else "deprecated"))
    return Decisions(validate_ids=tuple(validate), flag=tuple(flag), demote=tuple(demote))


def apply_lift(
    memory: Memory,
    policy: LiftPolicy | None = None,
    *,
    lesson_ids: Sequence[str] | None = None,
    now: datetime | None = None,
) -> LiftReport:
    """Compute lift for `lesson_ids` (default: all active lessons) and apply the policy."""
    policy = policy or LiftPolicy()
    lifts = memory.lesson_lift(lesson_ids)
    flagged = memory.flagged_ids([s.lesson_id for s in lifts])
    decisions = decide(lifts, policy, now=now or datetime.now(UTC), flagged=flagged)
    for lesson_id in decisions.validate_ids:
        memory.set_status(lesson_id, "validated")
    flagged_now = [i for i, reason in decisions.flag if memory.flag_for_review(i, reason)]
    for lesson_id, status in decisions.demote:
        memory.set_status(lesson_id, status)
    return LiftReport(
        lifts=tuple(lifts),
        validated=decisions.validate_ids,
        flagged=tuple(flagged_now),
        decayed=tuple(i for i, _ in decisions.demote),
    )
