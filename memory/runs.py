"""Runs and lesson uses: which lessons a run was given, and whether that run then passed.

This is the raw material of lesson lift: `helped` counts runs that passed after using the
lesson, `misled` runs that failed. Counters are bumped with `SET x = x + n` so concurrent
processes never lose an increment.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from memory.db import Database
from memory.errors import LessonNotFoundError, MemoryUsageError
from memory.redact import redact
from memory.schema import LessonRow, LessonUseRow, RunRow, to_run, to_use
from memory.types import LessonUse, Page, RecallStage, Run

# Why a run ended without an outcome, kept to this length (a traceback's last line fits).
MAX_ERROR_CHARS = 500


def _run_lock(run_id: str) -> str:
    return f"run:{run_id}"


def _get_or_create(
    session: Session, run_id: str, *, task_id: str = "", goal: str = "", scope: str = "default"
) -> RunRow:
    row = session.exec(select(RunRow).where(RunRow.id == run_id).with_for_update()).first()
    if row is None:
        # A goal is the user's words, and users paste credentials into them: redact like
        # every other text the memory stores.
        row = RunRow(id=run_id, task_id=task_id, goal=redact(goal), scope=scope)
        session.add(row)
        session.flush()
    return row


def record_run(db: Database, run_id: str, *, task_id: str, goal: str, scope: str) -> Run:
    """Create the run (idempotent: recording an existing run returns it unchanged)."""
    with db.write(lock_scope=_run_lock(run_id)) as session:
        row = _get_or_create(session, run_id, task_id=task_id, goal=goal, scope=scope)
        return to_run(row)


def get_run(db: Database, run_id: str) -> Run:
    """One run by id."""
    with db.read() as session:
        row = session.get(RunRow, run_id)
        if row is None:
            raise LessonNotFoundError(f"no run {run_id!r}")
        return to_run(row)


def report_use(db: Database, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
    """Record that `lesson_ids` were put into the run's prompt at `stage`; bump `recalled`.

    Reporting the same (lesson, run, stage) twice counts once. An unknown run is created on
    the fly (the loop may report before, or without, `record_run`). A run that has ended
    (finished or aborted) takes no more uses: they would stay pending, counted nowhere.
    """
    wanted = list(dict.fromkeys(lesson_ids))
    if not wanted:
        return
    with db.write(lock_scope=_run_lock(run_id)) as session:
        known = set(session.exec(select(LessonRow.id).where(col(LessonRow.id).in_(wanted))).all())
        missing = [i for i in wanted if i not in known]
        if missing:
            raise LessonNotFoundError(f"no lesson(s) {', '.join(missing)}")
        run = _get_or_create(session, run_id)
        if run.passed is not None or run.error:
            ended = "aborted" if run.error else ("passed" if run.passed else "failed")
            raise MemoryUsageError(
                f"run {run_id!r} has ended ({ended}): report uses before finishing the run"
            )
        already = set(
            session.exec(
                select(LessonUseRow.lesson_id).where(
                    LessonUseRow.run_id == run_id,
                    LessonUseRow.stage == stage,
                    col(LessonUseRow.lesson_id).in_(wanted),
                )
            ).all()
        )
        fresh = [i for i in wanted if i not in already]
        for lesson_id in fresh:
            session.add(LessonUseRow(lesson_id=lesson_id, run_id=run_id, stage=stage))
        if fresh:
            session.execute(
                update(LessonRow)
                .where(col(LessonRow.id).in_(fresh))
                .values(recalled=LessonRow.recalled + 1)
            )
        recalled = list(run.recalled_lesson_ids or [])
        run.recalled_lesson_ids = recalled + [i for i in wanted if i not in recalled]
        session.add(run)


def _pending_uses(session: Session, run_id: str) -> list[LessonUseRow]:
    """The run's uses not settled yet."""
    query = select(LessonUseRow).where(
        LessonUseRow.run_id == run_id, LessonUseRow.outcome == "pending"
    )
    return list(session.exec(query).all())


def finish_run(
    db: Database,
    run_id: str,
    *,
    passed: bool,
    rounds: int,
    prompt_tokens: int,
    completion_tokens: int,
    misled_ids: Sequence[str] = (),
) -> Run:
    """Store the outcome; settle the run's pending uses and bump helped/misled once per lesson.

    `misled_ids` count as misled even in a run that passed: the run showed they made things
    worse (a candidate drawn without them did better). Finishing twice re-stores the numbers
    but does not count the lessons again.
    """
    outcome = "passed" if passed else "failed"
    outranked = set(misled_ids)
    with db.write(lock_scope=_run_lock(run_id)) as session:
        run = session.exec(select(RunRow).where(RunRow.id == run_id).with_for_update()).first()
        if run is None:
            raise LessonNotFoundError(f"no run {run_id!r}")
        run.passed = passed
        run.error = ""  # it did end with an outcome after all
        run.rounds = rounds
        run.prompt_tokens = prompt_tokens
        run.completion_tokens = completion_tokens
        session.add(run)
        pending = _pending_uses(session, run_id)
        for use in pending:
            use.outcome = "outranked" if use.lesson_id in outranked else outcome
            session.add(use)
        lesson_ids = {use.lesson_id for use in pending}
        misled = lesson_ids & outranked if passed else lesson_ids
        for ids, counter in ((lesson_ids - misled, LessonRow.helped), (misled, LessonRow.misled)):
            if ids:
                session.execute(
                    update(LessonRow)
                    .where(col(LessonRow.id).in_(sorted(ids)))
                    .values({counter: counter + 1})
                )
        session.flush()
        return to_run(run)


def abort_run(db: Database, run_id: str, error: str) -> Run:
    """A run that ended without an outcome: keep why, settle its pending uses as "aborted"
    (no helped, no misled: the run said nothing about them). A finished or already aborted
    run is left as it is; a run not recorded yet is recorded."""
    with db.write(lock_scope=_run_lock(run_id)) as session:
        run = _get_or_create(session, run_id)
        if run.passed is not None or run.error:
            return to_run(run)  # finished, or aborted before: the first word stands
        run.error = redact(error)[:MAX_ERROR_CHARS] or "ended without an outcome"
        session.add(run)
        pending = _pending_uses(session, run_id)
        for use in pending:
            use.outcome = "aborted"
            session.add(use)
        session.flush()
        return to_run(run)


def uses(db: Database, lesson_id: str) -> list[LessonUse]:
    """Every use of a lesson, oldest first."""
    with db.read() as session:
        rows = session.exec(
            select(LessonUseRow)
            .where(LessonUseRow.lesson_id == lesson_id)
            .order_by(col(LessonUseRow.created_at), col(LessonUseRow.id))
        ).all()
        return [to_use(r) for r in rows]


def list_runs(db: Database, *, offset: int, limit: int) -> Page[Run]:
    """A page of runs, newest first, with the total count."""
    with db.read() as session:
        total = session.exec(select(func.count()).select_from(RunRow)).one()
        rows = session.exec(
            select(RunRow)
            .order_by(col(RunRow.created_at).desc(), col(RunRow.id).desc())
            .offset(offset)
            .limit(limit)
        ).all()
        items = tuple(to_run(r) for r in rows)
    return Page[Run](items=items, total=total, offset=offset, limit=limit)
