"""Clustering across error types (retrospectives.link) on small built inputs, and through a pass."""

from __future__ import annotations

import numpy as np
import pytest

from memory.store import Memory
from memory.types import LessonDraft, LessonFilter, LessonQuery
from retrospectives.consolidate import ConsolidationConfig, consolidate, undo
from retrospectives.link import Lexical, LinkConfig, linked_clusters


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_word_overlap_weighs_rare_words() -> None:
    lex = Lexical(
        [
            "the file starts with a byte order mark: open it with utf-8-sig",
            "a byte order mark sticks to the first header; use utf-8-sig",
            "the file uses a comma as decimal mark",
        ]
    )
    assert lex.overlap(0, 1) > 0.4 > lex.overlap(0, 2)
    assert lex.overlap(0, 0) == pytest.approx(1.0)


def test_average_linkage_refuses_a_chain_through_one_pair() -> None:
    # a-b and b-c are close, a-c far: single linkage would make one cluster of three.
    vecs = np.vstack([unit(1, 0), unit(0.8, 0.6), unit(0.28, 0.96)])
    cfg = LinkConfig(threshold=0.7, lexical_weight=0.0)
    clusters = linked_clusters(["a", "b", "c"], [False] * 3, vecs, ["x", "y", "z"], cfg)
    (pair,) = clusters  # one pair of two (a-b and b-c tie), never all three
    assert len(pair.members) == 1 and "b" in (pair.leader, *pair.members)


def test_words_join_what_vectors_alone_keep_apart_and_old_lessons_stay_apart() -> None:
    vecs = np.vstack([unit(1, 0), unit(0.5, 0.87), unit(0.5, -0.87), unit(1, 0.05)])
    texts = [
        "thousands separators: remove the grouping commas before float",
        "grouping commas in 1,200: remove the thousands separators",
        "naive and aware datetimes compared",
        "thousands separators grouping commas remove",
    ]
    cosine_only = linked_clusters(
        ["a", "b", "c", "d"],
        [False] * 4,
        vecs,
        texts,
        LinkConfig(threshold=0.55, lexical_weight=0.0),
    )
    with_words = linked_clusters(
        ["a", "b", "c", "d"],
        [False] * 4,
        vecs,
        texts,
        LinkConfig(threshold=0.55, lexical_weight=0.6),
    )
    assert {frozenset((c.leader, *c.members)) for c in cosine_only} == {frozenset("ad")}
    assert {frozenset((c.leader, *c.members)) for c in with_words} == {frozenset("abd")}
    # Two old lessons (earlier clusters) never merge; the old one leads its cluster.
    old = linked_clusters(["o1", "o2", "n"], [True, True, False], vecs[[0, 3, 1]],
                          [texts[0], texts[3], texts[1]], LinkConfig())  # fmt: skip
    (c,) = old
    assert c.leader_is_old and c.leader in {"o1", "o2"} and c.members == ("n",)


def test_bad_input_is_an_error() -> None:
    with pytest.raises(ValueError, match="one entry per lesson"):
        linked_clusters(["a"], [False, False], np.zeros((1, 2), np.float32), ["x"], LinkConfig())


def _draft(scope: str, error_type: str, cause: str, fix: str) -> LessonDraft:
    return LessonDraft(scope=scope, error_type=error_type, symptom=f"{error_type} in run",
                       root_cause=cause, fix=fix)  # fmt: skip


def test_a_pass_merges_one_cause_across_types_never_across_scopes() -> None:
    cause = "amounts use thousands separators like 1,200 so the grouping commas break parsing"
    fix = "remove the grouping commas (thousands separators) before converting"
    drafts = [
        _draft("s1", "ValueError", cause, fix),
        _draft("s1", "check_failed", cause + " and the totals come out wrong", fix),
        _draft("s2", "ValueError", cause, fix),
        _draft("s1", "TypeError", "naive and aware datetimes are compared", "convert to UTC"),
    ]
    with Memory.in_memory(dedup_similarity=1.01) as memory:
        memory.add_many(drafts)
        per_type = ConsolidationConfig(across_error_types=False)
        assert consolidate(memory, llm=None, config=per_type).merges == ()
        report = consolidate(memory, llm=None, config=ConsolidationConfig(full=True))
        (merge,) = report.merges
        lessons = memory.list_lessons(LessonFilter(limit=100)).items
        canonical = next(les for les in lessons if les.id == merge.canonical_id)
        assert canonical.scope == "s1" and canonical.error_type == "ValueError"
        assert len(canonical.merged_from) == 2
        members = {les.error_type for les in lessons if les.merged_into == canonical.id}
        assert members == {"ValueError", "check_failed"}
        # The reflection gate sees the members' types: a check_failed query finds the canonical.
        query = LessonQuery(text=f"{canonical.symptom}\n{canonical.root_cause}", scope="s1",
                            stage="reflection", error_types=("check_failed",))  # fmt: skip
        assert [h.lesson.id for h in memory.recall(query)] == [canonical.id]
        undo(memory, merge.id)
        restored = memory.list_lessons(LessonFilter(limit=100)).items
        assert sorted(les.status for les in restored) == ["candidate"] * 4
