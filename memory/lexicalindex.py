"""Recall's in-process index of each scope: BM25 postings (`memory.lexical`) over the
recallable lessons, and which of them carry which error type.

Why in process rather than in the database: SQLite has FTS5 and PostgreSQL has tsvector, but
they tokenise and rank differently, and the contract suite runs one behaviour on both. A
scope's postings are built from SQL on first use and then refreshed incrementally: each lookup
reads a fingerprint of the scope (recallable lessons, latest `updated_at`); when it moved, the
rows updated since the last refresh are re-read (adds, sightings, edits, status changes all
bump `updated_at`), and a count that still disagrees (a row deleted, e.g. a merge undone)
rebuilds the scope. So another process's writes are seen on the next recall. The lexical
index only proposes and ranks candidates: recall checks every one against SQL again.

The same refresh keeps each recallable lesson's own error type, so recall's searches among
the recallable lessons (`LexicalIndex.recallable`: when lessons it may not return crowd the
vector pool, or none of the gate's types is among the candidates) name ids without reading
a whole scope from SQL: at 100k lessons in one scope that read took 250-350 ms a recall.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import case, func
from sqlalchemy import select as columns  # sqlmodel's select takes at most 4
from sqlmodel import Session, col, select

from memory import counts
from memory.db import Database
from memory.dedup import index_text
from memory.lexical import BM25, BM25Scores
from memory.matchtext import match_text
from memory.schema import LessonRow
from memory.types import ACTIVE


class _Kinds:
    """A scope's recallable lessons by their own error type, in the order they came."""

    def __init__(self) -> None:
        self._type: dict[str, str] = {}
        self._by_type: dict[str, dict[str, None]] = {}

    def put(self, doc_id: str, error_type: str) -> None:
        if self._type.get(doc_id) == error_type:
            return
        self.remove(doc_id)
        self._type[doc_id] = error_type
        self._by_type.setdefault(error_type, {})[doc_id] = None

    def remove(self, doc_id: str) -> None:
        error_type = self._type.pop(doc_id, None)
        if error_type is not None:
            del self._by_type[error_type][doc_id]

    def ids(self, error_types: Sequence[str] = ()) -> list[str]:
        """Every one (no types given), or those of `error_types`."""
        if not error_types:
            return list(self._type)
        return [i for t in dict.fromkeys(error_types) for i in self._by_type.get(t, ())]


@dataclass
class _Scope:
    bm25: BM25 = field(default_factory=BM25)
    kinds: _Kinds = field(default_factory=_Kinds)
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
        any), by scope: what recall names to the vector index, which holds no status. From
        the postings' refresh, so no read of a whole scope: at 100k lessons that read cost
        more than a whole recall may take."""
        unique = list(dict.fromkeys(scopes))
        with self._lock:
            found = {
                scope: state.kinds.ids(error_types)
                for scope, state in zip(unique, self._fresh(unique), strict=True)
            }
        return {scope: ids for scope, ids in found.items() if ids}

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
        rows = columns(
            col(LessonRow.id),
            col(LessonRow.symptom),
            col(LessonRow.root_cause),
            col(LessonRow.status),
            col(LessonRow.error_type),
        ).where(col(LessonRow.scope) == scope)
        if state.latest is not None:
            # >=: rows written in the same instant as the last refresh are read again.
            since = rows.where(col(LessonRow.updated_at) >= state.latest)
            _apply(state, session.execute(since))
        if len(state.bm25) != count:  # first use, or a row left the scope or was deleted
            state.bm25, state.kinds = BM25(), _Kinds()
            _apply(state, session.execute(rows))


def _apply(state: _Scope, rows: Iterable[tuple[str, str, str, str, str]]) -> None:
    for lesson_id, symptom, root_cause, status, error_type in rows:
        if status in ACTIVE:
            state.bm25.put(lesson_id, index_text(symptom, root_cause))
            state.kinds.put(lesson_id, error_type)
        else:
            state.bm25.remove(lesson_id)
            state.kinds.remove(lesson_id)
