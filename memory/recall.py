"""Recall: lessons for a query, found by meaning and by words, fused, re-ranked, diversified.

Read-only: counters move only through `Memory.report_use`, when the loop actually used them.

Candidates: the nearest lessons of the vector index and the best BM25 matches of the same
lesson texts (`memory.lexical`), in the query's scopes, recallable (SQL has the last word),
each with its cosine similarity to the query. A candidate below `min_similarity` is never
recalled, whatever its words: the cut is what lets an unrelated task get no lesson.

Text: the query and the lessons are compared without the template they share (the kind, the
error type, locations, the feedback's labels: `memory.matchtext`), by both indexes.

Error types: when the query names some (the loop sends the exception name and the feedback
kind at reflection), recall answers only if at least one lesson of those types passes the cut
(memory has seen this kind of failure; a lesson merged across error types counts under the
types of every lesson merged into it); it then ranks lessons of every type, because a root
cause shows up under several exceptions (a BOM is a KeyError in one program, a ValueError or a
JSONDecodeError in another). On the labelled set (scripts/bench_recall.py) a ranking boost for
the query's types helped nothing, so the type gates and does not reorder.

Data gate (`memory.datagate`, `RecallConfig.data_gate`, both stages by default): a lesson
quoting data symbols (a currency sign, '%', ';', '|', a BOM) reaches a query whose data quotes
other ones no more, nor a task whose data (`LessonQuery.data`) holds none of them; see that
module for the rule and its measurements.

Surface views (`LessonQuery.surface`): the loop's task-start text is the goal plus the head
of each input file and the data's profile (`agent.profile.input_profile`: unusual headers,
columns of mixed or symbol-bearing formats), and the goal's words dominate its embedding,
while a lesson's symptom describes the data ("in the input: values of column 'amount' ...:
'$860.45', ..."). So the loop also sends each head and each profile line on its own; a
lesson's similarity is then its best cosine over the query text and these views (max
fusion), for the cut, the gate and the ranking.

Seed gate (`memory.seedgate`): at the seed stage (task start) the loop gives no error type.
A seed query whose text states an error (a feedback line, a traceback's exception line) is
gated on the types it states, as above; one that states none (a goal and its data) is not.
Either way recall answers only if its best candidate reaches the cut (`min_similarity`, or
`seed_min_similarity` when higher); `seed_cut_margin` may then let candidates in down to the
cut minus the margin (all or nothing, so hit@3 is not cut twice). A query that sets its own
`min_similarity` is not gated. The margin is off by default: on the trap tasks' starts
(scripts/bench_recall.py) 0.10 raised hit@1 by about 0.05, but on the store of a real
learning stream (scripts/bench_learning.py on the 1.5B) a lesson let in below the cut
outranked the one that opened the gate and replaced a right seed hit by a wrong one.

Shared data symbols (`RecallConfig.seed_data_cut`): at a task start, a lesson quoting a
data symbol the task's data holds is a candidate from that cosine (any, by default), without
the seed gate, ranked after every lesson that passed on meaning (`memory.datagate`).

Ranking: relevance (cosine and BM25 fused) plus lift, recency, status and review flag
(`memory.ranking`, with its measurements).

Exclusions (`LessonQuery.exclude`, the lessons a run saw mislead): never candidates, so they
neither open a gate nor take a slot or the budget; a filter after recall would leave the run
nothing where the next lesson would have fitted.

Diversity and size: best first, a lesson is taken unless its root cause and fix repeat a
taken one (`diversity_similarity`) or the rendered block would exceed the query's token
budget. The best lesson is the exception to the budget: it is clipped to fit
(`memory.render.render_lessons(..., budget)`), not dropped, unless even its labels exceed
the budget. A lesson the retrospective writes from a verified fix (the symptom with its
input evidence, the fix with its code change) is about the loop's whole 300-token budget:
dropped, the sibling task's seed recall found it and handed out nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlmodel import col, select

from memory import queries
from memory.datagate import QueryData, lesson_marks, query_data
from memory.db import Database
from memory.dedup import Vector, cosine, unpack
from memory.embeddings import Embedder
from memory.index import Hit, LessonIndex
from memory.lexicalindex import LexicalIndex
from memory.matchtext import match_text
from memory.ranking import RecallConfig, fused, score
from memory.render import estimate_tokens, render_lessons
from memory.schema import LessonRow, ReviewRow, to_lesson
from memory.seedgate import candidate_cut, gate_types, passes_seed_gate, seed_gated
from memory.types import (
    ACTIVE,
    GLOBAL_SCOPE,
    Lesson,
    LessonQuery,
    RecallStage,
    ScoredLesson,
    utcnow,
)


@dataclass(frozen=True)
class _Candidate:
    lesson: Lesson
    vector: Vector  # root cause + fix (diversification)
    similarity: float
    bm25: float
    flagged: bool  # for review (memory.lift)
    # Its error type and those of the lessons merged into it (consolidation merges one root
    # cause across error types): what the error-type gate looks at.
    types: frozenset[str] = frozenset()
    # The data symbols its symptom and root cause quote (`memory.datagate.lesson_marks`).
    marks: frozenset[str] = frozenset()


def scopes_of(query: LessonQuery) -> list[str]:
    """The scopes a query searches: its own, plus "global" when asked."""
    scopes = [query.scope]
    if query.include_global and query.scope != GLOBAL_SCOPE:
        scopes.append(GLOBAL_SCOPE)
    return scopes


_Loaded = tuple[dict[str, tuple[Lesson, Vector]], set[str], dict[str, frozenset[str]]]


def _load(db: Database, ids: Sequence[str]) -> _Loaded:
    """The lessons by id, which are flagged for review, and each one's error types."""
    if not ids:
        return {}, set(), {}
    with db.read() as session:
        rows = session.exec(select(LessonRow).where(col(LessonRow.id).in_(list(ids)))).all()
        flagged = session.exec(
            select(ReviewRow.lesson_id).where(col(ReviewRow.lesson_id).in_(list(ids)))
        ).all()
        members = session.exec(
            select(LessonRow.merged_into, LessonRow.error_type).where(
                col(LessonRow.merged_into).in_(list(ids))
            )
        ).all()
    types = {row.id: {row.error_type} for row in rows}
    for canonical, error_type in members:
        if canonical in types:
            types[canonical].add(error_type)
    loaded = {row.id: (to_lesson(row), unpack(row.dedup_vector)) for row in rows}
    return loaded, set(flagged), {i: frozenset(ts) for i, ts in types.items()}


def _still_fits(lesson: Lesson, query: LessonQuery) -> bool:
    # The indexes can lag SQL (drift, concurrent status change) and status is not filtered in
    # the vector index at all: SQL has the last word.
    return lesson.status in ACTIVE and lesson.scope in scopes_of(query)


def _diversify(
    ranked: list[tuple[ScoredLesson, Vector]], limit: int, budget: int, threshold: float
) -> list[ScoredLesson]:
    picked: list[tuple[ScoredLesson, Vector]] = []
    for candidate, vec in ranked:
        if len(picked) >= limit:
            break
        if any(cosine(vec, v) >= threshold for _, v in picked):
            continue  # its root cause and fix repeat an already picked lesson
        block = render_lessons([s for s, _ in picked] + [candidate])
        if estimate_tokens(block) > budget and (picked or not _clips_to(candidate, budget)):
            continue  # a shorter, lower-ranked lesson may still fit
        picked.append((candidate, vec))
    return [s for s, _ in picked]


def _clips_to(best: ScoredLesson, budget: int) -> bool:
    """The best lesson is never left out for its length alone: the prompt clips its long
    fields to the budget (`render_lessons(..., budget)`), unless even its labels exceed it."""
    return estimate_tokens(render_lessons([best], budget)) <= budget


class _Search:
    """One recall's view of both indexes: similarities, BM25 scores, SQL rows."""

    def __init__(
        self,
        query: LessonQuery,
        vectors: Sequence[list[float]],
        index: LessonIndex,
        lexical: LexicalIndex,
        db: Database,
        cut: float,
        data_gate: tuple[RecallStage, ...] = (),
        types: frozenset[str] = frozenset(),
        data_cut: float | None = None,
    ) -> None:
        self.query, self.index, self.lexical, self.db, self.cut = query, index, lexical, db, cut
        self.types = types  # the error-type gate's (memory.seedgate.gate_types)
        # The query text's vector first, then one per surface view (max fusion).
        self.views = np.asarray(vectors, dtype=np.float32)
        self.bm25 = lexical.search(query.text, scopes_of(query))
        # Only scopes where SQL has recallable lessons (the lexical index counted them just
        # now): an empty "global" costs a vector query per recall and can add nothing.
        self.scopes = self.bm25.scopes
        self.similarity: dict[str, float] = {}
        # What the query's data holds, at the stages the data gate applies to.
        gated = query.stage in data_gate and query.min_similarity is None
        self.data = query_data(query) if gated else QueryData()
        self.blocked: set[str] = set()  # candidates the data gate kept out
        # A task start's own data lets a lesson sharing one of its symbols in from here.
        self.floor = cut if data_cut is None or not self.data.strict else min(cut, data_cut)

    def recallable(self, error_types: Sequence[str] = ()) -> dict[str, list[str]]:
        """The recallable lessons of the searched scopes (of these types, if any), by scope,
        but the query's exclusions and those the data gate kept out: they would crowd the
        fallback searches' pools again."""
        found = self.lexical.recallable(self.scopes, error_types)
        if error_types:
            # A canonical counts under its merged members' types too, as the gate reads them.
            for scope, ids in queries.canonicals_of(self.db, self.scopes, error_types).items():
                found[scope] = list(dict.fromkeys(found.get(scope, []) + ids))
        excluded = set(self.query.exclude) | self.blocked
        if not excluded:
            return found
        return {scope: [i for i in ids if i not in excluded] for scope, ids in found.items()}

    def nearest(self, n: int, only: dict[str, list[str]] | None = None) -> list[Hit]:
        """Vector neighbours (of any view, among `only`'s ids if given); their similarities
        are remembered."""
        if not self.scopes:
            return []
        if len(self.views) == 1:
            hits = self.index.query(self.views[0].tolist(), n, scopes=self.scopes, only=only)
            for hit in hits:
                self.similarity[hit.lesson_id] = hit.similarity
            return hits
        found = {
            hit.lesson_id
            for view in self.views
            for hit in self.index.query(view.tolist(), n, scopes=self.scopes, only=only)
        }
        # A neighbour of one view may be closer still to another: score each on all views.
        self._score(sorted(found))
        # A lesson gone from the index meanwhile (an undone merge's canonical) has no vector.
        scored = [i for i in found if i in self.similarity]
        ranked = sorted(scored, key=lambda i: (-self.similarity[i], i))[:n]
        return [Hit(i, self.similarity[i]) for i in ranked]

    def _score(self, ids: Sequence[str]) -> None:
        """Each lesson's best cosine over the views, from its stored vector (one read per
        scope that has some)."""
        by_scope: dict[str | None, list[str]] = {}
        for i in ids:
            by_scope.setdefault(self.bm25.scope_of(i), []).append(i)
        for scope, some in by_scope.items():
            self._score_in(some, self.scopes if scope is None else [scope])
        # An index write behind SQL (a scope edit not yet indexed) keeps a vector elsewhere.
        missing = [i for i in ids if i not in self.similarity]
        if missing:
            self._score_in(missing, self.scopes)

    def _score_in(self, ids: Sequence[str], scopes: Sequence[str]) -> None:
        for lesson_id, vec in self.index.vectors(list(ids), scopes=list(scopes)).items():
            best = float(np.max(self.views @ np.asarray(vec, dtype=np.float32)))
            self.similarity[lesson_id] = min(1.0, best)

    def _marks(self, lesson: Lesson) -> frozenset[str]:
        """A candidate's data symbols; read only for a query the data gate applies to."""
        return lesson_marks(lesson) if self.data.judges else frozenset()

    def lexical_top(self, n: int) -> list[str]:
        """The `n` best BM25 matches, with their similarities fetched from the index."""
        ranked = self.bm25.top(n)  # best first, ties by id
        ids = [i for i, _ in ranked]
        self._score([i for i in ids if i not in self.similarity])
        return ids

    def candidates(self, ids: Sequence[str]) -> list[_Candidate]:
        """Those of `ids` above the cut that SQL still calls recallable in these scopes."""
        excluded = set(self.query.exclude)
        above = [
            i
            for i in dict.fromkeys(ids)
            if self.similarity.get(i, -1.0) >= self.floor and i not in excluded
        ]
        loaded, flagged, types = _load(self.db, above)
        found = [
            _Candidate(
                lesson,
                vec,
                self.similarity[i],
                self.bm25.get(i, 0.0),
                i in flagged,
                types[i],
                marks,
            )
            for i in above
            if i in loaded
            for lesson, vec in [loaded[i]]
            if _still_fits(lesson, self.query)
            for marks in [self._marks(lesson)]
            # Below the cut only by a data symbol the task's data shares.
            if self.similarity[i] >= self.cut or self.data.shares(marks)
        ]
        # Kept out before the pool is judged full, so lessons about other data cannot crowd
        # out one that fits (the fallback searches then skip them).
        self.blocked |= {c.lesson.id for c in found if not self.data.admits(c.marks)}
        return [c for c in found if c.lesson.id not in self.blocked]


def _gather(search: _Search, pool: int, limit: int) -> list[_Candidate]:
    """Vector and lexical candidates above the cut (see the module docstring)."""
    hits = search.nearest(pool)
    found = search.candidates([h.lesson_id for h in hits] + search.lexical_top(pool))
    # The pool is full of lessons above the cut: more may be hiding behind it. (If it is
    # not, it holds every lesson above the cut, and searching again cannot add one.)
    saturated = len(hits) >= pool and hits[-1].similarity >= search.cut
    if len(found) < limit and saturated:
        # Merged/deprecated lessons crowded the pool: search among the recallable lessons
        # SQL names (the index holds no status; read again only when SQL moved, and slower,
        # so only when the fast path came up short).
        hits = search.nearest(pool, search.recallable())
        found = search.candidates([c.lesson.id for c in found] + [h.lesson_id for h in hits])
    types = search.types
    if types and not any(c.types & types for c in found) and saturated:
        typed = search.nearest(pool, search.recallable(sorted(types)))
        found = search.candidates([c.lesson.id for c in found] + [h.lesson_id for h in typed])
    if types and not any(c.types & types for c in found):
        return []  # memory has not seen this kind of failure
    return found


def _rank(
    found: list[_Candidate], config: RecallConfig, now: datetime, cut: float
) -> list[tuple[ScoredLesson, Vector]]:
    if not found:
        return []
    by_vector = sorted(found, key=lambda c: (-c.similarity, c.lesson.id))
    top_cosine = max(c.similarity for c in found)
    top_bm25 = max(c.bm25 for c in found)
    ranked = [
        (
            ScoredLesson(
                lesson=c.lesson,
                similarity=c.similarity,
                score=score(
                    fused(c.similarity, c.bm25, cut=cut, top_cosine=top_cosine, top_bm25=top_bm25),
                    c.lesson,
                    config,
                    now,
                    flagged=c.flagged,
                ),
            ),
            c.vector,
        )
        for c in by_vector
    ]
    ranked.sort(key=lambda pair: pair[0].score, reverse=True)
    return ranked


def recall(
    query: LessonQuery,
    *,
    embedder: Embedder,
    index: LessonIndex,
    lexical: LexicalIndex,
    db: Database,
    config: RecallConfig,
) -> list[ScoredLesson]:
    """Lessons for `query`, best first; empty when nothing is similar enough."""
    if query.token_budget <= 0 or not query.text.strip():
        return []
    # Compared as lessons are indexed: without the template the two share (memory.matchtext).
    views = [match_text(query.text), *(match_text(v) for v in query.surface if v.strip())]
    cut = candidate_cut(query, config)
    types = gate_types(query, stated=config.seed_stated_types)
    data_cut = config.seed_data_cut if seed_gated(query) else None
    search = _Search(
        query, embedder.embed(views), index, lexical, db, cut, config.data_gate, types, data_cut
    )
    found = _gather(search, max(config.candidate_pool, query.limit * 4), query.limit)
    meant = [c for c in found if c.similarity >= search.cut]
    if meant and not passes_seed_gate(query, max(c.similarity for c in meant), config):
        meant = []
    # A lesson let in by the data alone ranks after every one that passed on meaning.
    shared = [c for c in found if c.similarity < search.cut]
    now = utcnow()
    ranked = _rank(meant, config, now, search.cut) + _rank(shared, config, now, search.floor)
    return _diversify(ranked, query.limit, query.token_budget, config.diversity_similarity)
