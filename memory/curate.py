"""Curation behind `lessonloop lessons`: store-wide counts and the status changes people make.

Status changes a person may make (`approve`, `deprecate`, `restore`); everything else is
refused with a `TransitionError` that says why. Merged lessons change only through
consolidation and its undo, so the merge record stays the one way back.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func
from sqlmodel import col, select

from memory.errors import MemoryUsageError
from memory.schema import LessonRow, to_lesson
from memory.store import Memory
from memory.types import ACTIVE, STATUSES, Lesson, LessonStatus


class TransitionError(MemoryUsageError):
    """A status change the curation rules refuse (e.g. approving a deprecated lesson)."""


class LessonStats(BaseModel):
    """Counts for `lessonloop lessons stats`."""

    model_config = ConfigDict(frozen=True)

    total: int
    by_status: dict[str, int]  # every status, zeros included
    by_error_type: dict[str, dict[str, int]]  # error type -> status -> count, largest first
    # Most `helped` first; merged lessons are left out (the canonical carries their counts).
    most_helpful: tuple[Lesson, ...]
    never_used: int  # active (candidate / validated) lessons never put into a prompt
    never_used_oldest: tuple[Lesson, ...]


def lesson_stats(memory: Memory, *, top: int = 5) -> LessonStats:
    """Counts by status and error type, the most helpful and the oldest never-used lessons."""
    never = (col(LessonRow.status).in_(list(ACTIVE)), LessonRow.recalled == 0)
    with memory._db.read() as session:
        counts = session.exec(
            select(LessonRow.error_type, LessonRow.status, func.count()).group_by(
                LessonRow.error_type, LessonRow.status
            )
        ).all()
        helpful = session.exec(
            select(LessonRow)
            .where(LessonRow.helped > 0, LessonRow.status != "merged")
            .order_by(col(LessonRow.helped).desc(), col(LessonRow.misled), col(LessonRow.id))
            .limit(top)
        ).all()
        never_count = session.exec(select(func.count()).select_from(LessonRow).where(*never)).one()
        oldest = session.exec(
            select(LessonRow)
            .where(*never)
            .order_by(col(LessonRow.created_at), col(LessonRow.id))
            .limit(top)
        ).all()
        most_helpful = tuple(to_lesson(r) for r in helpful)
        never_used_oldest = tuple(to_lesson(r) for r in oldest)
    by_status: dict[str, int] = dict.fromkeys(STATUSES, 0)
    by_type: dict[str, dict[str, int]] = {}
    for error_type, status, n in counts:
        by_status[status] = by_status.get(status, 0) + n
        by_type.setdefault(error_type, dict.fromkeys(STATUSES, 0))[status] = n
    ranked = sorted(by_type.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    return LessonStats(
        total=sum(by_status.values()),
        by_status=by_status,
        by_error_type=dict(ranked),
        most_helpful=most_helpful,
        never_used=never_count,
        never_used_oldest=never_used_oldest,
    )


# Which statuses a person may move a lesson from, per target. Merged lessons change only
# through consolidation (and its undo), so the merge record stays the one way back.
_FROM: dict[LessonStatus, tuple[LessonStatus, ...]] = {
    "validated": ("candidate",),
    "deprecated": ACTIVE,
    "candidate": ("deprecated",),
}


def _transition(memory: Memory, lesson_id: str, target: LessonStatus, verb: str) -> Lesson:
    lesson = memory.get(lesson_id)
    if lesson.status in _FROM[target]:
        return memory.set_status(lesson_id, target)
    if lesson.status == target:
        raise TransitionError(f"lesson {lesson_id} is already {target}")
    if lesson.status == "merged":
        raise TransitionError(
            f"lesson {lesson_id} is merged into {lesson.merged_into}: {verb} that lesson, "
            "or undo the merge first"
        )
    allowed = " or ".join(_FROM[target])
    raise TransitionError(
        f"cannot {verb} lesson {lesson_id}: it is {lesson.status}; only {allowed} lessons "
        f"can become {target}"
    )


def approve(memory: Memory, lesson_id: str) -> Lesson:
    """candidate -> validated; any other starting status raises `TransitionError`."""
    return _transition(memory, lesson_id, "validated", "approve")


def deprecate(memory: Memory, lesson_id: str) -> Lesson:
    """candidate or validated -> deprecated (never recalled again); else `TransitionError`."""
    return _transition(memory, lesson_id, "deprecated", "deprecate")


def restore(memory: Memory, lesson_id: str) -> Lesson:
    """deprecated -> candidate (recalled again); else `TransitionError`."""
    return _transition(memory, lesson_id, "candidate", "restore")
