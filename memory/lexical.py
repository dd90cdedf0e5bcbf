"""The lexical side of recall: Okapi BM25 over each scope's lesson texts, kept fresh from SQL.

The vector index finds lessons by meaning; BM25 finds the ones that share rare words with the
query (an exception name, `utf-8-sig`, a format string). Recall fuses both rankings (see
`memory.recall`). The text is the one the vector index embeds: symptom + root cause.

Why in process rather than in the database: SQLite has FTS5 and PostgreSQL has tsvector, but
they tokenise and rank differently, and the contract suite runs one behaviour on both. A
scope's postings are built from SQL on first use and then refreshed incrementally: each lookup
reads a fingerprint of the scope (recallable lessons, latest `updated_at`); when it moved, the
rows updated since the last refresh are re-read (adds, sightings, edits, status changes all
bump `updated_at`), and a count that still disagrees (a row deleted, e.g. a merge undone)
rebuilds the scope. So another process's writes are seen on the next recall. The lexical
index only proposes and ranks candidates: recall checks every one against SQL again.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import case, func
from sqlmodel import Session, col, select

from memory.db import Database
from memory.dedup import index_text
from memory.schema import LessonRow

RECALLABLE = ("candidate", "validated")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens: the plain keyword view of a text."""
    return re.findall(r"\w+", text.lower())


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) with Lucene's non-negative idf, documents added and removed.

    A score > 0 means exactly "shares at least one word with the query" (rank-bm25's idf can
    go negative for common words). Query words count as often as they occur.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, dict[str, int]] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._lengths: dict[str, int] = {}
        self._total = 0

    def __len__(self) -> int:
        return len(self._terms)

    def put(self, doc_id: str, text: str) -> None:
        """Add a document, or replace the one with that id."""
        self.remove(doc_id)
        terms = Counter(tokenize(text))
        self._terms[doc_id] = terms
        self._lengths[doc_id] = sum(terms.values())
        self._total += self._lengths[doc_id]
        for term, tf in terms.items():
            self._postings.setdefault(term, {})[doc_id] = tf

    def remove(self, doc_id: str) -> None:
        """Drop a document (no-op when absent)."""
        terms = self._terms.pop(doc_id, None)
        if terms is None:
            return
        self._total -= self._lengths.pop(doc_id)
        for term in terms:
            posting = self._postings[term]
            del posting[doc_id]
            if not posting:
                del self._postings[term]

    def scores(self, query: str) -> dict[str, float]:
        """BM25 score of every document that shares a word with `query`."""
        n = len(self._terms)
        if n == 0:
            return {}
        avg = self._total / n
        out: dict[str, float] = {}
        for term in tokenize(query):
            posting = self._postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for doc_id, tf in posting.items():
                norm = self.k1 * (1 - self.b + self.b * self._lengths[doc_id] / avg)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: str, n: int) -> list[tuple[str, float]]:
        """The `n` best (id, score) pairs, best first; only documents sharing a word."""
        return heapq.nlargest(n, self.scores(query).items(), key=lambda pair: pair[1])


@dataclass
class _Scope:
    bm25: BM25 = field(default_factory=BM25)
    count: int = -1
    latest: datetime | None = None


class LexicalIndex:
    """BM25 postings per scope over the recallable lessons, refreshed from SQL on each lookup."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._scopes: dict[str, _Scope] = {}
        self._lock = threading.Lock()  # one refresh at a time; a lookup is read-only after it

    def scores(self, query: str, scopes: Sequence[str]) -> dict[str, float]:
        """BM25 score of every recallable lesson of `scopes` that shares a word with `query`.

        Each scope has its own word statistics; a lesson lives in one scope, so the scores of
        two scopes are simply put side by side.
        """
        found: dict[str, float] = {}
        for bm25 in self._fresh(list(dict.fromkeys(scopes))):
            found.update(bm25.scores(query))
        return found

    def _fresh(self, scopes: list[str]) -> list[BM25]:
        """The postings of `scopes`, refreshed where SQL moved (one fingerprint query)."""
        recallable = case((col(LessonRow.status).in_(RECALLABLE), 1), else_=0)
        with self._lock, self._db.read() as session:
            seen = {
                scope: (int(count), latest)
                for scope, count, latest in session.exec(
                    select(LessonRow.scope, func.sum(recallable), func.max(LessonRow.updated_at))
                    .where(col(LessonRow.scope).in_(scopes))
                    .group_by(LessonRow.scope)
                ).all()
            }
            out = []
            for scope in scopes:
                state = self._scopes.setdefault(scope, _Scope())
                count, latest = seen.get(scope, (0, None))
                if (count, latest) != (state.count, state.latest):
                    self._refresh(session, scope, state, count)
                    state.count, state.latest = count, latest
                out.append(state.bm25)
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
        if status in RECALLABLE:
            bm25.put(lesson_id, index_text(symptom, root_cause))
        else:
            bm25.remove(lesson_id)
