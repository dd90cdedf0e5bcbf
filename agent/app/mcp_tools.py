"""What `lessonloop mcp` offers an assistant, as plain methods over the public memory API.

`LessonTools(memory)` holds one open `Memory` (so the embedder is loaded once) and answers
each tool call with a frozen model; agent/app/mcp_server.py only registers these methods with the
MCP SDK and picks the transport, so every tool can be tested here without one.

Runs: an assistant with its own loop calls `start_run` (a run id), `recall_lessons(...,
run_id=...)` (the returned lessons are recorded as given to that run, as the loop records
what it puts into a prompt), then `report_outcome(run_id, lesson_ids, passed)` once: the
lessons it used get `helped` or `misled` and lift follows. `record_lesson(..., run_id=...)`
is refused when it only restates a lesson recalled into that run (the recall-loop guard).

Nothing here decides what the memory decides: recall, redaction, dedup, the recall-loop
guard, lift and the curation rules are `Memory`'s and `memory.curate`'s. Errors the caller can
act on are `ToolCallError` or a `memory` usage error; the server turns both into MCP tool
errors with the message.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.errors import ToolCallError
from memory import LessonNotFoundError, Memory, curate
from memory.errors import brief
from memory.lift import LessonLift
from memory.recall import scopes_of
from memory.redact import secret_kinds
from memory.render import render_lesson, render_lessons
from memory.seedgate import why_nothing
from memory.types import (
    ACTIVE,
    AddAction,
    Evidence,
    Lesson,
    LessonDraft,
    LessonFilter,
    LessonQuery,
    LessonStatus,
    Run,
    ScoredLesson,
)

log = logging.getLogger(__name__)

RecordAction = Literal["created", "folded", "refused"]
_ACTIONS: dict[AddAction, RecordAction] = {
    "created": "created",
    "merged_duplicate": "folded",
    "rejected_recall_loop": "refused",
}
# A person (or an assistant) searching wants every match up to `limit`, not a prompt budget.
_SEARCH_BUDGET = 10_000_000
_SEARCH_POOL = 50  # LessonQuery.limit allows at most 50
_LIST_HINT = "; search without text lists the scope's lessons"


class LessonView(BaseModel):
    """A lesson as a tool shows it: its texts, status and use counters."""

    model_config = ConfigDict(frozen=True)

    id: str
    scope: str
    error_type: str
    symptom: str
    root_cause: str
    fix: str
    applies_when: str
    status: LessonStatus
    seen: int
    recalled: int
    helped: int
    misled: int

    @classmethod
    def of(cls, lesson: Lesson) -> LessonView:
        return cls.model_validate(lesson.model_dump(include=set(cls.model_fields)))


class RecalledLesson(BaseModel):
    """A recalled lesson with its cosine similarity to the query and its ranking score."""

    model_config = ConfigDict(frozen=True)

    lesson: LessonView
    similarity: float
    score: float


class RecallAnswer(BaseModel):
    """`recall_lessons`: the block to paste into a prompt, and the lessons in it."""

    model_config = ConfigDict(frozen=True)

    block: str  # "" when no lesson is close enough: then there is nothing to paste
    lesson_ids: tuple[str, ...]
    lessons: tuple[RecalledLesson, ...]
    run_id: str | None  # the run the lessons were recorded as given to, if any


class SearchAnswer(BaseModel):
    """`search_lessons`: matches by meaning (with `text`) or a page of the scope's lessons."""

    model_config = ConfigDict(frozen=True)

    lessons: tuple[RecalledLesson, ...]
    # Every lesson that matched (a page may show fewer); by meaning, of the 50 best at most.
    total: int
    # When a search by meaning found nothing: where it looked and the gates it applied.
    note: str = ""


class RecordAnswer(BaseModel):
    """`record_lesson`: what the memory did with the lesson, and why."""

    model_config = ConfigDict(frozen=True)

    action: RecordAction
    reason: str
    lesson_id: str | None  # the new lesson, or the one it was folded into; None if refused
    lesson: LessonView | None
    # Kinds of secrets masked before anything was stored (e.g. "openai_key").
    redacted: tuple[str, ...]


class RunAnswer(BaseModel):
    """`start_run`: the id to pass to `recall_lessons`, `record_lesson`, `report_outcome`."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    scope: str


class OutcomeAnswer(BaseModel):
    """`report_outcome`: the run's outcome and the lessons it counted for."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    passed: bool
    lessons: tuple[LessonView, ...]  # every lesson given to the run, counters updated


class LiftView(BaseModel):
    """Whether runs given the lesson passed more often than comparable runs without it."""

    model_config = ConfigDict(frozen=True)

    runs: int  # finished runs that were given the lesson
    passed: int
    pass_rate: float | None
    interval: tuple[float, float]  # Wilson 95 % interval of pass_rate
    baseline_runs: int
    baseline_rate: float | None
    lift: float | None  # pass_rate - baseline_rate; None without runs on either side

    @classmethod
    def of(cls, lift: LessonLift) -> LiftView:
        return cls(
            runs=lift.n,
            passed=lift.passed,
            pass_rate=lift.rate,
            interval=(lift.low, lift.high),
            baseline_runs=lift.baseline_n,
            baseline_rate=lift.baseline_rate,
            lift=lift.lift,
        )


class LessonDetail(BaseModel):
    """`get_lesson`: the lesson, its evidence, merge links, uses and lift."""

    model_config = ConfigDict(frozen=True)

    lesson: LessonView
    evidence: tuple[Evidence, ...]
    merged_into: str | None
    merged_from: tuple[str, ...]
    uses: int
    lift: LiftView | None


class DeprecateAnswer(BaseModel):
    """`deprecate_lesson`: the lesson after the change (never recalled again)."""

    model_config = ConfigDict(frozen=True)

    lesson: LessonView
    reason: str


def _recalled(hits: Sequence[ScoredLesson]) -> tuple[RecalledLesson, ...]:
    return tuple(
        RecalledLesson(lesson=LessonView.of(h.lesson), similarity=h.similarity, score=h.score)
        for h in hits
    )


class LessonTools:
    """The MCP tools over one open `Memory`. Calls are serialised: one store, one writer."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        # The SDK runs sync tools in worker threads; a store is used by one call at a time.
        self._lock = threading.Lock()

    def recall_lessons(
        self,
        text: str,
        scope: str,
        *,
        error_type: str | None = None,
        limit: int = 3,
        token_budget: int = 300,
        include_global: bool = False,
        run_id: str | None = None,
        exclude: Sequence[str] = (),
        data: Sequence[str] = (),
    ) -> RecallAnswer:
        """Lessons for a task or an error, as the loop recalls them, rendered as its block;
        `exclude`: ids not to give again (they did not help), so the next ones take their place
        (count them against the lessons with `report_outcome(..., misled_ids=...)`); `data`:
        the task's input as its program reads it (each file's first lines), so a lesson about
        data symbols this input lacks ('$', a BOM, ';') stays out (`memory.datagate`)."""
        query = LessonQuery(
            text=text,
            scope=scope,
            error_types=(error_type,) if error_type else (),
            # The loop asks at the start of a task (seed) and after a failure (reflection,
            # with the error): the same two stages here.
            stage="reflection" if error_type else "seed",
            limit=limit,
            token_budget=token_budget,
            include_global=include_global,
            exclude=tuple(exclude),
            data=tuple(data),
        )
        with self._lock:
            if run_id is not None and (run := self._run(run_id, open_only=True)).scope != scope:
                raise ToolCallError(
                    f"run {run_id} is of scope {run.scope!r}, this recall asks scope {scope!r}: "
                    "recall in the run's scope (include_global for 'global' lessons), or "
                    "leave run_id out"
                )
            hits = self.memory.recall(query)
            ids = [h.lesson.id for h in hits]
            if run_id is not None and ids:
                self.memory.report_use(run_id, query.stage, ids)
        return RecallAnswer(
            block=render_lessons(hits, token_budget),
            lesson_ids=tuple(ids),
            lessons=_recalled(hits),
            run_id=run_id,
        )

    def search_lessons(
        self,
        scope: str,
        *,
        text: str | None = None,
        error_type: str | None = None,
        limit: int = 10,
        offset: int = 0,
        include_global: bool = False,
    ) -> SearchAnswer:
        """Find lessons by meaning (`text`), or page through a scope's active lessons.

        Read-only: nothing is recorded as given to a run.
        """
        with self._lock:
            if text is None or not text.strip():
                page = self.memory.list_lessons(
                    LessonFilter(
                        scope=scope,
                        include_global=include_global,
                        error_type=error_type or None,
                        status=ACTIVE,
                        sort="helped",
                        offset=offset,
                        limit=limit,
                    )
                )
                views = tuple(
                    RecalledLesson(lesson=LessonView.of(x), similarity=0.0, score=0.0)
                    for x in page.items
                )
                return SearchAnswer(lessons=views, total=page.total)
            types = (error_type,) if error_type else ()
            query = LessonQuery(
                text=text,
                scope=scope,
                include_global=include_global,
                error_types=types,
                # Recall gates on error types and then ranks every type: ask for the whole
                # pool and keep the asked type (as `lessonloop lessons search` does).
                limit=_SEARCH_POOL,
                token_budget=_SEARCH_BUDGET,
            )
            hits = self.memory.recall(query)
        if types:
            hits = [h for h in hits if h.lesson.error_type in types]
        note = "" if hits else why_nothing(query, self.memory.recall_config) + _LIST_HINT
        return SearchAnswer(
            lessons=_recalled(hits[offset : offset + limit]), total=len(hits), note=note
        )

    def record_lesson(
        self,
        scope: str,
        error_type: str,
        symptom: str,
        root_cause: str,
        fix: str,
        *,
        applies_when: str = "",
        evidence: str = "",
        run_id: str | None = None,
    ) -> RecordAnswer:
        """Store a lesson through the write path: redacted, deduplicated, loop-guarded."""
        found = sorted(
            {k for t in (symptom, root_cause, fix, applies_when, evidence) for k in secret_kinds(t)}
        )
        with self._lock:
            injected = self._run(run_id).recalled_lesson_ids if run_id is not None else ()
            try:
                draft = LessonDraft(
                    scope=scope,
                    error_type=error_type,
                    symptom=symptom,
                    root_cause=root_cause,
                    fix=fix,
                    applies_when=applies_when,
                    evidence=(
                        (Evidence(run_id=run_id or "", excerpt=evidence),) if evidence else ()
                    ),
                    injected_lesson_ids=injected,
                )
            except ValidationError as exc:
                raise ToolCallError(f"not a lesson: {brief(exc)}") from None
            result = self.memory.add(draft, run_id=run_id)
        lesson = result.lesson
        return RecordAnswer(
            action=_ACTIONS[result.action],
            reason=result.reason,
            lesson_id=lesson.id if lesson else None,
            lesson=LessonView.of(lesson) if lesson else None,
            redacted=tuple(found),
        )

    def start_run(self, scope: str, *, goal: str = "", task_id: str = "") -> RunAnswer:
        """Open a run: the unit lift counts (one attempt at one task, passed or not)."""
        run_id = "mcp_" + secrets.token_hex(8)
        with self._lock:
            run = self.memory.record_run(run_id, task_id=task_id, goal=goal, scope=scope)
        return RunAnswer(run_id=run.id, scope=run.scope)

    def report_outcome(
        self,
        run_id: str,
        lesson_ids: Sequence[str],
        passed: bool,
        *,
        misled_ids: Sequence[str] = (),
    ) -> OutcomeAnswer:
        """Close a run: the lessons it used (and those recalled into it) helped or misled;
        `misled_ids` (given to the run, found to make it worse) misled whatever the outcome."""
        with self._lock:
            run = self._run(run_id, open_only=True)
            wanted = list(dict.fromkeys([*lesson_ids, *misled_ids]))
            allowed = scopes_of(LessonQuery(text="", scope=run.scope, include_global=True))
            for lesson_id in wanted:
                lesson = self.memory.get(lesson_id)
                if lesson.scope not in allowed:
                    raise ToolCallError(
                        f"lesson {lesson_id} belongs to scope {lesson.scope!r}, run {run_id} "
                        f"to {run.scope!r}: only lessons of the run's scope (or 'global') count"
                    )
            # "seed": what the assistant brought to the task; a lesson recall already
            # recorded for this run (at any stage) counts once.
            brought = [i for i in wanted if i not in run.recalled_lesson_ids]
            self.memory.report_use(run_id, "seed", brought)
            done = self.memory.finish_run(run_id, passed, misled_ids=misled_ids)
            lessons = tuple(LessonView.of(self.memory.get(i)) for i in done.recalled_lesson_ids)
        return OutcomeAnswer(run_id=run_id, passed=passed, lessons=lessons)

    def get_lesson(self, lesson_id: str) -> LessonDetail:
        """One lesson in full, with its use count and lift."""
        with self._lock:
            lesson = self.memory.get(lesson_id)
            uses = self.memory.uses(lesson_id)
            lifts = self.memory.lesson_lift([lesson_id])
        return LessonDetail(
            lesson=LessonView.of(lesson),
            evidence=lesson.evidence,
            merged_into=lesson.merged_into,
            merged_from=lesson.merged_from,
            uses=len(uses),
            lift=LiftView.of(lifts[0]) if lifts else None,
        )

    def deprecate_lesson(self, lesson_id: str, reason: str) -> DeprecateAnswer:
        """Retire a lesson that is wrong or harmful: it is never recalled again."""
        with self._lock:
            lesson = curate.deprecate(self.memory, lesson_id)
        # The store keeps no change log yet: the reason goes to the server's log.
        log.info("deprecated %s: %s", lesson_id, reason)
        return DeprecateAnswer(lesson=LessonView.of(lesson), reason=reason)

    def top_lessons(self, scope: str, *, limit: int = 10) -> str:
        """The scope's most helpful active lessons, rendered as the loop renders lessons."""
        with self._lock:
            page = self.memory.list_lessons(
                LessonFilter(scope=scope, status=ACTIVE, sort="helped", limit=limit)
            )
        if not page.items:
            return f"No lessons in scope {scope!r} yet."
        body = [render_lesson(i, x) for i, x in enumerate(page.items, start=1)]
        return "\n".join([f"Top lessons of scope {scope!r} ({page.total} active):", *body])

    def _run(self, run_id: str, *, open_only: bool = False) -> Run:
        try:
            run = self.memory.get_run(run_id)
        except LessonNotFoundError:
            raise ToolCallError(
                f"no run {run_id!r}: call start_run first and pass the run_id it returns"
            ) from None
        if open_only and (run.passed is not None or run.error):
            ended = f"passed={run.passed}" if run.passed is not None else "ended by an error"
            raise ToolCallError(
                f"run {run_id} was already reported ({ended}): start a new run for a new attempt"
            )
        return run
