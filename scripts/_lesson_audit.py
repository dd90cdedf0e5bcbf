"""What a learning stream stored: is every lesson's advice verified, and from a solved run?

Issue 13's junk goal, read off a bench_learning result: the share of stored lessons whose
fix is not verified (no "verified change:" from a fail-then-pass run of its own), lessons that
cite an unsolved run, and recalls that handed such a lesson to a later run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from retrospectives.extract import CHANGE_MARK


class LessonAudit(BaseModel):
    """Counts over every learning store of one bench_learning result."""

    model_config = ConfigDict(frozen=True)

    lessons: int
    verified: int
    unverified_share: float | None
    from_unsolved_runs: int
    recalls: int
    recalls_of_unsolved: int


def audit(
    records: Sequence[Any], lessons: Mapping[str, Sequence[Mapping[str, Any]]]
) -> LessonAudit:
    """`records`: RunRecords; `lessons`: the exported lessons of each learning store."""
    # The runs that wrote to the learning stores: the learning condition's, or, when only the
    # frozen condition ran, its training part (the same runs, recorded as "frozen").
    writers = {
        (r.seed, r.order, r.position): r
        for r in records
        if r.condition == "learning" or (r.condition == "frozen" and r.phase == "train")
    }
    solved = {f"learning-{s}-{o}-{p}": r.passed for (s, o, p), r in writers.items()}
    by_id: dict[str, Mapping[str, Any]] = {}
    for store in lessons.values():
        by_id.update({lesson["id"]: lesson for lesson in store})

    def from_unsolved(lesson: Mapping[str, Any]) -> bool:
        runs = [e.get("run_id") for e in lesson.get("evidence", ())]
        return any(solved.get(run) is False for run in runs)

    verified = sum(CHANGE_MARK in lesson["fix"] for lesson in by_id.values())
    recalled = [
        lesson_id
        for r in writers.values()
        for lesson_id in (*r.recalled_seed, *r.recalled_reflection)
    ]
    return LessonAudit(
        lessons=len(by_id),
        verified=verified,
        unverified_share=round(1 - verified / len(by_id), 3) if by_id else None,
        from_unsolved_runs=sum(from_unsolved(lesson) for lesson in by_id.values()),
        recalls=len(recalled),
        recalls_of_unsolved=sum(from_unsolved(by_id[i]) for i in recalled if i in by_id),
    )
