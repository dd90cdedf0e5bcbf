"""Every read and write the console makes of the store: the one module that touches `Memory`.

Writes go through the memory API only (`Memory.update`, `memory.curate`, the consolidator's
undo, `Memory.clear_review_flag`), so redaction, dedup and lifecycle rules hold whoever
writes. Reads reuse what the CLI uses (`Memory.list_lessons`, `Memory.recall`,
`Memory.lesson_lift`, `memory.curate.lesson_stats`, `memory.quality.quality_report`).

Only the public `Memory` API is used (no SQL, no rows): facets, run pages, merge history
with before-snapshots and BM25 scores are `Memory` reads too.

One lock serialises store access: the web server calls from a thread pool, and the
embedded chromadb client and the in-process BM25 postings are not made for parallel use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from agent.app.console import trajectory
from agent.app.console.changes import ChangeLog
from agent.app.console.explain import explain
from agent.app.console.models import (
    Decision,
    Facets,
    FlaggedLesson,
    Health,
    Hygiene,
    LessonDetail,
    LessonLine,
    MergeDetail,
    MergeLink,
    ReviewQueue,
    RunDetail,
    SearchResult,
    Snapshot,
)
from agent.app.report import latest_learning, latest_recall
from memory import (
    Lesson,
    LessonFilter,
    LessonMemoryError,
    LessonQuery,
    Memory,
    MemoryUsageError,
    MergeRecord,
    Page,
    Run,
    curate,
)
from memory.edit import EDITABLE
from memory.quality import quality_report
from memory.types import ACTIVE, utcnow
from retrospectives import consolidate

T = TypeVar("T")

# A person searching wants every similar lesson up to the limit, not the prompt's budget
# (as `lessonloop lessons search`).
SEARCH_BUDGET = 10_000_000
# Hits shown per search. Recall's candidate pool is 4x the limit and its diversification
# renders the picked block once per candidate: 50 took 2-4x as long as 20 on 100k lessons.
SEARCH_LIMIT = 20
FACETS_TTL_S = 30.0
# The health page waits this long for a first hygiene computation (a small store is done).
HYGIENE_WAIT_S = 3.0
# Above this many lessons the figures take minutes and the thread slows every page (the
# GIL): they are computed when the curator asks (the Recompute button), not on a visit.
HYGIENE_AUTO_MAX = 20_000


# The edit form's one-line inputs (the rest are textareas).
ONE_LINE = frozenset({"scope", "error_type"})


def form_text(text: str, *, one_line: bool = False) -> str:
    """`text` as an HTML form shows it and sends it back: line breaks as LF (a browser sends
    CRLF, and its parser reads a lone CR as LF), or none at all in a one-line input (the
    browser strips them from its value), and NUL as U+FFFD (the parser's replacement)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    return text.replace("\n", "") if one_line else text


class ConsoleData:
    """The console's view of one store (plus the run directories and benchmark results)."""

    def __init__(
        self, memory: Memory, *, runs_dir: Path, results_dir: Path, changes: ChangeLog
    ) -> None:
        self.memory = memory
        self.runs_dir = runs_dir
        self.results_dir = results_dir
        self.changes = changes
        self._lock = threading.RLock()
        self._facets: tuple[float, Facets] | None = None
        self._hygiene = Hygiene(
            report=None, computed_at=None, seconds=None, running=False, error=None
        )
        self._hygiene_lock = threading.Lock()

    @contextmanager
    def _store(self) -> Iterator[Memory]:
        with self._lock:
            yield self.memory

    def _locked(self, fn: Callable[[Memory], T]) -> T:
        with self._store() as memory:
            return fn(memory)

    # -- lessons -----------------------------------------------------------------------

    def lessons(self, where: LessonFilter) -> Page[LessonLine]:
        """A page of lessons (filters and paging in SQL) with the page's lift and flags."""
        with self._store() as memory:
            page = memory.list_lessons(where)
            ids = [lesson.id for lesson in page.items]
            lifts = {s.lesson_id: s for s in memory.lesson_lift(ids)} if ids else {}
            flagged = memory.flagged_ids(ids)
        lines = tuple(
            LessonLine(lesson=lesson, lift=lifts.get(lesson.id), flagged=lesson.id in flagged)
            for lesson in page.items
        )
        return Page[LessonLine](items=lines, total=page.total, offset=page.offset, limit=page.limit)

    def facets(self) -> Facets:
        """The scopes and error types present (for the filter menus).

        Two index scans of the whole table: cached for `FACETS_TTL_S` (and dropped when the
        console itself writes), so a page of a big store does not pay them every time.
        """
        with self._store() as memory:
            cached = self._facets
            if cached is not None and time.monotonic() - cached[0] < FACETS_TTL_S:
                return cached[1]
            facets = Facets(scopes=tuple(memory.scopes()), error_types=tuple(memory.error_types()))
            self._facets = (time.monotonic(), facets)
            return facets

    def search(
        self, text: str, *, scope: str, error_type: str | None, min_similarity: float | None
    ) -> SearchResult:
        """Recall exactly as the loop does (one scope), with the ranking formula split up."""
        types = (error_type,) if error_type else ()
        query = LessonQuery(
            text=text,
            scope=scope,
            error_types=types,
            limit=SEARCH_LIMIT,
            min_similarity=min_similarity,
            token_budget=SEARCH_BUDGET,
        )
        with self._store() as memory:
            hits = memory.recall(query)
            if types:  # recall gates on types, then ranks every type: a person wants the type
                hits = [h for h in hits if h.lesson.error_type in types]
            ids = [h.lesson.id for h in hits]
            bm25 = memory.bm25_scores(text, [scope]) if ids else {}
            flagged = memory.flagged_ids(ids)
            config = memory.recall_config
        explained = explain(hits, config=config, bm25=bm25, flagged=flagged, now=utcnow())
        cut = config.min_similarity if min_similarity is None else min_similarity
        return SearchResult(
            text=text, scope=scope, error_type=error_type, min_similarity=cut, hits=explained
        )

    def lesson(self, lesson_id: str) -> LessonDetail:
        """One lesson with its uses, lift, review flag, merges and console changes."""
        with self._store() as memory:
            lesson = memory.get(lesson_id)
            uses = memory.uses(lesson_id)
            lifts = memory.lesson_lift([lesson_id])
            flag = next((f for f in memory.review_flags() if f.lesson_id == lesson_id), None)
            merges = tuple(
                MergeLink(record=r, role="canonical" if r.canonical_id == lesson.id else "member")
                for r in memory.merges_of(lesson_id)
            )
        return LessonDetail(
            lesson=lesson,
            uses=tuple(uses),
            lift=lifts[0] if lifts else None,
            flag=flag,
            merges=merges,
            changes=self.changes.for_lesson(lesson_id),
        )

    def edit(self, lesson_id: str, fields: dict[str, str], client: str) -> Lesson:
        """Change a lesson's text (redacted, re-embedded by `Memory.update`); logged.

        `fields` as the edit form sent them (`form_text`): a field that reads as the form
        showed it was not touched and keeps its stored text, line breaks and all."""
        unknown = set(fields) - set(EDITABLE)
        if unknown:
            raise MemoryUsageError(f"cannot edit {', '.join(sorted(unknown))}")
        with self._store() as memory:
            before = memory.get(lesson_id)
            changed = {
                k: v
                for k, v in fields.items()
                if form_text(getattr(before, k), one_line=k in ONE_LINE) != form_text(v)
            }
            if not changed:
                return before
            after = memory.update(lesson_id, **changed)
            self._facets = None
        detail = "; ".join(f"{k}: {getattr(before, k)!r} -> {getattr(after, k)!r}" for k in changed)
        self.changes.record(lesson_id, "edit", detail, client)
        return after

    def set_status(self, lesson_id: str, decision: Decision, client: str) -> Lesson:
        """approve / deprecate / restore (curation rules) or keep; each clears the review
        flag; logged."""
        with self._store() as memory:
            before = memory.get(lesson_id)
            if decision == "approve":
                lesson = curate.approve(memory, lesson_id)
            elif decision == "deprecate":
                lesson = curate.deprecate(memory, lesson_id)
            elif decision == "restore":
                lesson = curate.restore(memory, lesson_id)
            else:
                lesson = before
            cleared = memory.clear_review_flag(lesson_id)
        detail = f"status {before.status} -> {lesson.status}" + (
            "; review flag cleared" if cleared else ""
        )
        self.changes.record(lesson_id, decision, detail, client)
        return lesson

    # -- review --------------------------------------------------------------------------

    def review(self, *, limit: int = 50) -> ReviewQueue:
        """Flagged lessons with their lift, misleading ones, candidates waiting."""
        with self._store() as memory:
            flags = memory.review_flags()
            ids = [f.lesson_id for f in flags]
            lifts = {s.lesson_id: s for s in memory.lesson_lift(ids)} if ids else {}
            lessons = {i: self._maybe(memory, i) for i in ids}
            misled = memory.list_lessons(LessonFilter(status=ACTIVE, sort="misled", limit=limit))
            waiting = memory.list_lessons(
                LessonFilter(status=("candidate",), sort="recalled", limit=limit)
            )
        return ReviewQueue(
            flagged=tuple(
                FlaggedLesson(flag=f, lesson=lessons[f.lesson_id], lift=lifts.get(f.lesson_id))
                for f in flags
            ),
            misleading=tuple(x for x in misled.items if x.misled > x.helped),
            candidates=waiting.items,
            candidates_total=waiting.total,
        )

    @staticmethod
    def _maybe(memory: Memory, lesson_id: str) -> Lesson | None:
        try:
            return memory.get(lesson_id)
        except MemoryUsageError:
            return None

    def refresh_review(self) -> tuple[int, int, int]:
        """Apply the lift policy as `review --apply-policy` does: (validated, flagged, decayed)."""
        from retrospectives.lift import apply_lift

        report = self._locked(apply_lift)
        return len(report.validated), len(report.flagged), len(report.decayed)

    # -- merges --------------------------------------------------------------------------

    def merges(self, *, limit: int = 200) -> tuple[MergeRecord, ...]:
        """Consolidation history, newest first."""
        return tuple(self._locked(lambda m: m.list_merges(limit=limit)))

    def merge(self, merge_id: str) -> MergeDetail:
        """A merge with the texts before it and the canonical as it is now."""
        with self._store() as memory:
            record = memory.get_merge(merge_id)
            before = tuple(
                Snapshot.model_validate(lesson.model_dump())
                for lesson in memory.merge_before(merge_id)
            )
            canonical = self._maybe(memory, record.canonical_id)
        return MergeDetail(record=record, before=before, canonical=canonical)

    def undo(self, merge_id: str, client: str) -> MergeRecord:
        """Undo a merge with the consolidator's undo (exact restore; the index follows)."""
        record = self._locked(lambda m: consolidate.undo(m, merge_id))
        self._facets = None
        for lesson_id in record.member_ids:
            self.changes.record(lesson_id, "undo-merge", f"merge {merge_id} undone", client)
        return record

    # -- runs ----------------------------------------------------------------------------

    def runs(self, *, offset: int, limit: int) -> Page[Run]:
        """Recent runs, newest first (paged in SQL)."""
        return self._locked(lambda m: m.list_runs(offset=offset, limit=limit))

    def run(self, run_id: str) -> RunDetail:
        """A run from the store, and its trajectory from its run directory when present."""
        stored = self._locked(lambda m: m.get_run(run_id))
        run_dir = self.runs_dir / run_id
        try:
            result = trajectory.load(run_dir)
        except trajectory.TrajectoryError as exc:
            return RunDetail(
                run=stored, run_dir=run_dir, trajectory_error=str(exc), stop_reason=None, rounds=()
            )
        return RunDetail(
            run=stored,
            run_dir=run_dir,
            trajectory_error=None,
            stop_reason=result.stop_reason,
            rounds=trajectory.rounds(result),
            verified=trajectory.verified(result),
        )

    # -- health --------------------------------------------------------------------------

    def health(self) -> Health:
        """Counts, the hygiene figures (computed in the background, see `hygiene`) and the
        newest learning / recall benchmark results."""
        with self._store() as memory:
            stats = curate.lesson_stats(memory)
        if self._hygiene.computed_at is None and stats.total <= HYGIENE_AUTO_MAX:
            self.recompute_hygiene(wait_s=HYGIENE_WAIT_S)
        learning = latest_learning(self.results_dir)
        recall = latest_recall(self.results_dir)
        return Health(
            stats=stats,
            hygiene=self._hygiene,
            learning=learning[1] if learning else None,
            learning_png=self.learning_png(),
            recall=recall[1] if recall else None,
        )

    def learning_png(self) -> Path | None:
        """The newest bench_learning run's plot, if it has one."""
        learning = latest_learning(self.results_dir)
        if learning is None:
            return None
        png = learning[0].parent / learning[1].png
        return png if png.is_file() else None

    # -- hygiene (stats --quality) --------------------------------------------------------

    def recompute_hygiene(self, *, wait_s: float = 0.0) -> Hygiene:
        """Start computing `quality_report` in a thread unless one runs; wait up to `wait_s`
        for the one started here.

        It compares every pair of active lessons per scope: minutes on 100k lessons, so it
        never holds the store lock (SQL reads only) and a page shows the last figures.
        """
        with self._hygiene_lock:
            if self._hygiene.running:
                return self._hygiene  # a page waits for its own start only, not again each time
            self._hygiene = self._hygiene.model_copy(update={"running": True})
            job = threading.Thread(
                target=self._compute_hygiene, name="console-hygiene", daemon=True
            )
            job.start()
        if wait_s > 0:
            job.join(wait_s)
        return self._hygiene

    def _compute_hygiene(self) -> None:
        started = time.perf_counter()
        report, error = None, None
        try:
            report = quality_report(self.memory)
        except LessonMemoryError as exc:  # the store failed: say so on the page, keep serving
            error = str(exc)
        finally:
            with self._hygiene_lock:
                self._hygiene = Hygiene(
                    report=report or self._hygiene.report,
                    computed_at=utcnow() if report is not None else self._hygiene.computed_at,
                    seconds=time.perf_counter() - started,
                    running=False,
                    error=error,
                )
