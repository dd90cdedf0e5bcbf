"""The neighbour search (retrospectives.neighbours) and the vectorised word overlap."""

from __future__ import annotations

import numpy as np
import pytest

from retrospectives.neighbours import SearchConfig, nearest
from retrospectives.overlap import Lexical

EXACT = SearchConfig(exact_limit=2**62)
APPROX = SearchConfig(exact_limit=0)


def clustered(groups: int, per: int, dim: int = 32, noise: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((groups, dim))
    points = np.repeat(centres, per, axis=0) + noise * rng.standard_normal((groups * per, dim))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def test_exact_search_matches_brute_force_and_skips_itself() -> None:
    vecs = clustered(10, 8)
    queries = np.array([0, 5, 33, 79], dtype=np.int64)
    idx, sims = nearest(vecs, queries, 5, EXACT)
    full = vecs[queries] @ vecs.T
    for row, q in enumerate(queries):
        full[row, q] = -np.inf
        want = np.argsort(-full[row])[:5]
        assert list(idx[row]) == list(want)
        assert np.allclose(sims[row], full[row, want], atol=1e-6)
        assert q not in idx[row]


def test_approximate_search_finds_most_true_neighbours() -> None:
    vecs = clustered(60, 10)  # 600 points: 60 tight groups
    every = np.arange(len(vecs), dtype=np.int64)
    want, _ = nearest(vecs, every, 9, EXACT)
    got, sims = nearest(vecs, every, 9, APPROX)
    recall = np.mean([len(set(g) & set(w)) / 9 for g, w in zip(got, want, strict=True)])
    assert recall >= 0.9
    assert all(i not in row for i, row in enumerate(got))  # never itself
    assert np.all(np.diff(sims, axis=1) <= 1e-6)  # nearest first
    for i, row in enumerate(got):  # each neighbour once
        assert len(set(row)) == len(row), i


def test_fewer_lessons_than_k_and_no_queries() -> None:
    vecs = clustered(1, 3)
    idx, sims = nearest(vecs, np.arange(3, dtype=np.int64), 10, APPROX)
    assert idx.shape == (3, 2) and np.isfinite(sims).all()
    idx, _ = nearest(vecs, np.zeros(0, dtype=np.int64), 10)
    assert idx.shape == (0, 2)
    idx, _ = nearest(vecs[:1], np.zeros(1, dtype=np.int64), 10)
    assert idx.shape == (1, 0)


def test_vectorised_overlap_equals_the_pairwise_one() -> None:
    texts = [
        "the file starts with a byte order mark: open it with utf-8-sig",
        "a byte order mark sticks to the first header; use utf-8-sig",
        "the file uses a comma as decimal mark",
        "",
        "amounts carry '$' and thousands separators",
    ]
    lex = Lexical(texts)
    left = np.array([0, 0, 1, 2, 3, 4, 4], dtype=np.int64)
    right = np.array([1, 2, 2, 3, 0, 4, 1], dtype=np.int64)
    got = lex.overlaps(left, right)
    want = [lex.overlap(int(i), int(j)) for i, j in zip(left, right, strict=True)]
    assert got == pytest.approx(want)
    assert got[5] == pytest.approx(1.0) and got[3] == 0.0
