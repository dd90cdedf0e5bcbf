"""Leader clustering on plain vectors."""

from __future__ import annotations

import numpy as np

from retrospectives.cluster import as_matrix, leader_clusters


def unit(*xs: float) -> list[float]:
    v = np.asarray(xs, dtype=np.float32)
    return list(v / np.linalg.norm(v))


A, A2, B = unit(1, 0, 0), unit(0.95, 0.1, 0), unit(0, 1, 0)


def test_new_lessons_cluster_among_themselves() -> None:
    clusters = leader_clusters(
        [], as_matrix([], 3), ["a", "b", "a2"], as_matrix([A, B, A2], 3), threshold=0.9
    )
    (c,) = clusters
    assert (c.leader, c.members, c.leader_is_old) == ("a", ("a2",), False)


def test_new_lessons_join_old_leaders_first() -> None:
    clusters = leader_clusters(
        ["old"], as_matrix([A], 3), ["a2", "b"], as_matrix([A2, B], 3), threshold=0.9
    )
    (c,) = clusters
    assert (c.leader, c.members, c.leader_is_old) == ("old", ("a2",), True)


def test_batches_give_the_same_clusters() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 16))
    vecs = np.repeat(centres, 6, axis=0) + rng.normal(scale=0.05, size=(30, 16))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    order = rng.permutation(30)
    ids = [str(i) for i in order]
    one = leader_clusters([], as_matrix([], 16), ids, vecs[order], threshold=0.9, batch=1000)
    small = leader_clusters([], as_matrix([], 16), ids, vecs[order], threshold=0.9, batch=4)
    assert len(one) == len(small) == 5
    assert {frozenset((c.leader, *c.members)) for c in one} == {
        frozenset((c.leader, *c.members)) for c in small
    }
