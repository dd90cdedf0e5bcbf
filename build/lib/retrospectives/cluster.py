"""Incremental greedy leader clustering of root-cause vectors (pure numpy, no model calls).

Within one bucket (scope + error type) every lesson that earlier passes already processed
("old": it stands for its cluster) is a leader. Each new lesson joins its most similar
leader when the cosine reaches the threshold; otherwise the new lessons are clustered among
themselves, greedily in arrival order, and the first of each group leads it.

Cost: one (batch x leaders) matrix product per batch of new lessons, plus (batch x batch)
for those that matched no leader, so an incremental pass costs O(new x leaders), never
O(n^2) model calls, and a full pass O(n x clusters). Vectors are unit length: dot = cosine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float32]


@dataclass(frozen=True)
class Cluster:
    """A leader and the new lessons that join it (at least one)."""

    leader: str
    leader_is_old: bool
    members: tuple[str, ...]  # new lessons, in arrival order, leader excluded
    similarities: tuple[float, ...]  # of each member to the leader


@dataclass
class _Leaders:
    ids: list[str]
    old: list[bool]
    vectors: list[Matrix] = field(default_factory=list)
    members: dict[int, list[tuple[str, float]]] = field(default_factory=dict)

    def matrix(self, dim: int) -> Matrix:
        if not self.vectors:
            return np.zeros((0, dim), dtype=np.float32)
        return np.vstack(self.vectors)

    def add(self, lesson_id: str, vector: Matrix, *, old: bool) -> int:
        self.ids.append(lesson_id)
        self.old.append(old)
        self.vectors.append(vector.reshape(1, -1))
        return len(self.ids) - 1


def as_matrix(vectors: Sequence[Sequence[float]] | Sequence[Matrix] | Matrix, dim: int) -> Matrix:
    """A float32 (n, dim) matrix; an empty input gives shape (0, dim)."""
    if len(vectors) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(vectors, dtype=np.float32).reshape(len(vectors), dim)


def leader_clusters(
    old_ids: Sequence[str],
    old_vectors: Matrix,
    new_ids: Sequence[str],
    new_vectors: Matrix,
    *,
    threshold: float,
    batch: int = 512,
) -> list[Cluster]:
    """Clusters (leader + at least one new member) of one bucket; see the module docstring."""
    if not new_ids:
        return []
    dim = new_vectors.shape[1]
    leaders = _Leaders(ids=[], old=[])
    if len(old_ids):
        leaders.vectors.append(old_vectors.astype(np.float32, copy=False))
        leaders.ids.extend(old_ids)
        leaders.old.extend([True] * len(old_ids))
    for start in range(0, len(new_ids), batch):
        ids = new_ids[start : start + batch]
        vecs = new_vectors[start : start + batch]
        _assign_batch(leaders, ids, vecs, threshold, dim)
    clusters = []
    for index, members in sorted(leaders.members.items()):
        if members:
            clusters.append(
                Cluster(
                    leader=leaders.ids[index],
                    leader_is_old=leaders.old[index],
                    members=tuple(m for m, _ in members),
                    similarities=tuple(s for _, s in members),
                )
            )
    return clusters


def _assign_batch(
    leaders: _Leaders, ids: Sequence[str], vecs: Matrix, threshold: float, dim: int
) -> None:
    known = leaders.matrix(dim)
    unmatched: list[int] = []
    if known.shape[0]:
        sims = vecs @ known.T
        best = sims.argmax(axis=1)
        for row, col in enumerate(best):
            sim = float(sims[row, col])
            if sim >= threshold:
                leaders.members.setdefault(int(col), []).append((ids[row], sim))
            else:
                unmatched.append(row)
    else:
        unmatched = list(range(len(ids)))
    if not unmatched:
        return
    sub = vecs[unmatched]
    inner = sub @ sub.T
    taken = np.zeros(len(unmatched), dtype=bool)
    for i in range(len(unmatched)):
        if taken[i]:
            continue
        taken[i] = True
        leader = leaders.add(ids[unmatched[i]], sub[i], old=False)
        later = np.nonzero((inner[i, i + 1 :] >= threshold) & ~taken[i + 1 :])[0] + i + 1
        for j in later:
            taken[j] = True
            leaders.members.setdefault(leader, []).append((ids[unmatched[j]], float(inner[i, j])))
