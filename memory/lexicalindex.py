"""Recall's in-process index of each scope: BM25 postings (`memory.lexical`) over the
recallable lessons, and which of them carry which error type.

Why in process rather than in the database: SQLite has FTS5 and PostgreSQL has tsvector, but
they tokenise and rank differently, and the contract suite runs one behaviour on both. A
scope's postings are built from SQL on first use and then refreshed incrementally: each lookup
reads a fingerprint of the scope (the trigger-kept counters of `memory.counts`, or on a
backend without them the recallable count and latest `updated_at`); when it moved, the rows
updated since the last refresh are re-read (adds, sightings, edits, status changes all bump
`updated_at`), and a count that still disagrees (a row deleted, e.g. a merge undone) rebuilds
the scope. A write that restores an older `updated_at` (a merge's undo, `import --replace` of
an older export) while the count comes out even (another lesson left the scope meanwhile)
is missed until the next rebuild. The postings only propose and rank candidates: recall
checks every one against SQL again, and finds lessons by meaning without them.

Which lessons of a scope are recallable, by error type (`LexicalIndex.recallable`: recall's
searches when lessons it may not return crowd the vector pool, or none of the gate's types
is among its candidates), is read from SQL per (scope, error type), again only for the pairs
whose counters moved since the last read: these searches must not miss a lesson, and at
100k lessons in one scope reading them all took 230-350 ms, a recall's budget several times.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import case, func
from sqlmodel import Session, col, select

from memory import counts
from memory.db import Database
from memory.dedup import index_text
from memory.lexical import BM25, BM25Scores
from memory.matchtext import match_text
from memory.schema import LessonRow
from memory.types import ACTIVE


@dataclass
class _Scope:
    bm25: BM25 = field(default_factory=BM25)
    mark: tuple[object, ...] = ()  # what SQL looked like at the last refresh
    latest: datetime | None = None


def _fingerprint(session: Session, scope: str) -> tuple[int, tuple[object, ...]]:
    """(recallable lessons of `scope`, a value that changes whenever the scope's lessons do).

    The trigger-kept counters cost one indexed read; a backend without them is counted.
    """
    try:
        mark = counts.read(session, scope)
        return mark.recallable, (mark.generation, mark.recallable)
    except counts.CountsUnavailable:
        recallable = case((col(LessonRow.status).in_(ACTIVE), 1), else_=0)
        count, latest = session.exec(
            select(func.sum(recallable), func.max(LessonRow.updated_at)).where(
                LessonRow.scope == scope
            )
        ).one()
        return int(count or 0), (int(count or 0), latest)


class LexicalIndex:
    """BM25 postings per scope over the recallable lessons, refreshed from SQL on each lookup;
    and which lessons are recallable, by error type (`recallable`)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._scopes: dict[str, _Scope] = {}
        # (scope, error type) -> (its counters' generation, its recallable lessons' ids)
        self._kinds: dict[tuple[str, str], tuple[int, list[str]]] = {}
        self._lock = threading.Lock()  # one refresh-and-score at a time

    def search(self, query: str, scopes: Sequence[str]) -> BM25Scores:
        """BM25 scores of the recallable lessons of `scopes` that share a word with `query`.

        Each scope has its own word statistics; a lesson lives in one scope, so the scores of
        two scopes are simply put side by side. `top(n)` gives the best without sorting all.
        The query is compared as the lessons are indexed: through `memory.matchtext`.
        """
        query = match_text(query)
        unique = list(dict.fromkeys(scopes))
        with self._lock:  # scoring reads the postings a concurrent refresh would write
            states = zip(unique, self._fresh(unique), strict=True)
            found = [state.bm25.search(query, scope) for scope, state in states]
        return BM25Scores.side_by_side(found)

    def scores(self, query: str, scopes: Sequence[str]) -> dict[str, float]:
        """`search` as a plain dict."""
        return self.search(query, scopes).to_dict()

    def recallable(
        self, scopes: Sequence[str], error_types: Sequence[str] = ()
    ) -> dict[str, list[str]]:
        """The recallable lessons of `scopes` (of their own type one of `error_types`, if
        any), by scope: what recall names to the vector index, which holds no status.

        Kept per (scope, error type), and read again from SQL, as it is at this call, only
        for the pairs whose counters moved since the last read (any process's insert,
        delete, or change of status, type, scope or text moves them): at 100k lessons in one
        scope a whole read costs more than a whole recall may take. A backend without
        counters is read every time."""
        found: dict[str, list[str]] = {}
        with self._db.read() as session, self._lock:
            for scope in dict.fromkeys(scopes):
                ids = self._recallable_in(session, scope, list(error_types) or None)
                if ids:
                    found[scope] = ids
        return found

    def _recallable_in(
        self, session: Session, scope: str, error_types: list[str] | None
    ) -> list[str]:
        rows = select(LessonRow.id, LessonRow.error_type).where(
            LessonRow.scope == scope, col(LessonRow.status).in_(ACTIVE)
        )
        try:
            marks = counts.read_each(session, scope, error_types)
        except counts.CountsUnavailable:
            if error_types is not None:
                rows = rows.where(col(LessonRow.error_type).in_(error_types))
            return [lesson_id for lesson_id, _ in session.exec(rows)]
        wanted = [t for t, mark in marks.items() if mark.recallable]
        stale = [
            t for t in wanted if self._kinds.get((scope, t), (None,))[0] != marks[t].generation
        ]
        if stale:
            # The counters first: rows read after them are at least as new.
            read: dict[str, list[str]] = {t: [] for t in stale}
            for lesson_id, error_type in session.exec(
                rows.where(col(LessonRow.error_type).in_(stale))
            ):
                read[error_type].append(lesson_id)
            for error_type, ids in read.items():
                self._kinds[(scope, error_type)] = (marks[error_type].generation, ids)
        return [i for t in wanted for i in self._kinds[(scope, t)][1]]

    def _fresh(self, scopes: list[str]) -> list[_Scope]:
        """The state of `scopes`, refreshed where SQL moved (`memory.counts` says so)."""
        with self._db.read() as session:
            out = []
            for scope in scopes:
                state = self._scopes.setdefault(scope, _Scope())
                count, mark = _fingerprint(session, scope)
                if mark != state.mark:
                    latest = session.exec(
                        select(func.max(LessonRow.updated_at)).where(LessonRow.scope == scope)
                    ).one()
                    self._refresh(session, scope, state, count)
                    state.mark, state.latest = mark, latest
                out.append(state)
            return out

    @staticmethod
    def _refresh(session: Session, scope: str, state: _Scope, count: int) -> None:
        rows = select(LessonRow.id, LessonRow.symptom, LessonRow.root_cause, LessonRow.status)
        rows = rows.where(LessonRow.scope == scope)
        if state.latest is not None:
            # >=: rows written in the same instant as the last refresh are read again.
            since = rows.where(col(LessonRow.updated_at) >= state.latest)
            _apply(state.bm25, session.exec(since).all())
        if len(state.bm25) != count:  # first use, or a row left the scope or was deleted
            state.bm25 = BM25()
            _apply(state.bm25, session.exec(rows).all())


def _apply(bm25: BM25, rows: Iterable[tuple[str, str, str, str]]) -> None:
    for lesson_id, symptom, root_cause, status in rows:
        if status in ACTIVE:
            bm25.put(lesson_id, index_text(symptom, root_cause))
        else:
            bm25.remove(lesson_id)
