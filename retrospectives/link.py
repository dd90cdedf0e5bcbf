"""Clustering by root cause across error types: average linkage on a neighbour graph.

One root cause shows up under several error types (a thousands separator is a `ValueError`
in one run and a wrong total, `check_failed`, in the next), so a scope's lessons are
clustered together, whatever their type, on a pair score that holds on unseen wording:

    score(a, b) = (1 - w) * cosine(root-cause embeddings) + w * lexical(a, b)

with `lexical` the rarity-weighted word overlap of root cause + fix (retrospectives.overlap).
MiniLM scores paraphrases of one root cause at 0.3-0.6, as it scores some different root
causes: the lexical side is what separates "strip the grouping commas" from "replace the
decimal comma".

Pairs: each new lesson with its `neighbours` nearest lessons by cosine
(retrospectives.neighbours: exact in blocks for an incremental pass, an inverted file plus
neighbour-of-neighbour rounds for a full pass over a large scope), never two old ones (they
stand for clusters earlier passes made). Linkage: pairs in falling score order join two
clusters only if the *average* score over every pair across them still reaches the
threshold (average linkage: no chaining through one lucky pair), the result holds at most
one old lesson (its leader) and at most `max_size` lessons.

Uncertain band (optional): with a `judge` (retrospectives.judge), candidate pairs scoring in
`[band_low, band_high)` are asked whether they share a root cause, at most
`judge_per_lesson` per new lesson (highest scores first) and `max_judged` per call; "same"
sets the pair's score to `judged_same`, "different" to 0, no answer leaves it. Without a
judge nothing changes.

Cost: the neighbour search (see there), O(new x neighbours) pair scores in a few numpy
calls, and linkage checks bounded by `max_size` squared each; a refused join is remembered
for the two clusters as they are, so it is not tried again for their other pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from retrospectives.cluster import Cluster, Matrix
from retrospectives.judge import PairJudge
from retrospectives.neighbours import Indices, SearchConfig, nearest
from retrospectives.overlap import Floats, Lexical, words

__all__ = ["Lexical", "LinkConfig", "linked_clusters", "words"]

# Below this many missing pair scores a join check scores them one by one (cheaper than
# the fixed cost of the vectorised path).
_SCALAR_PAIRS = 12


@dataclass(frozen=True)
class LinkConfig:
    """Knobs of the linkage; chosen on both halves of both labelled sets (README)."""

    threshold: float = 0.35
    lexical_weight: float = 0.6
    neighbours: int = 10
    max_size: int = 24
    batch: int = 512
    search: SearchConfig = field(default_factory=SearchConfig)
    # With a judge: the band of pair scores that is asked, and what a verdict "same" scores.
    band_low: float = 0.10
    band_high: float = 0.60
    judge_per_lesson: int = 6
    max_judged: int = 5000
    judged_same: float = 1.0


@dataclass
class _Linkage:
    """Pair scores, each computed once and remembered under the key `low * n + high`
    (plain ints hash and compare faster than tuples: a full pass looks up ~300k pairs per
    20k-lesson scope)."""

    vectors: Matrix
    lexical: Lexical
    weight: float
    old: Sequence[bool]
    cache: dict[int, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.vectors.shape[0])

    def key(self, i: int, j: int) -> int:
        return i * self.n + j if i < j else j * self.n + i

    def score(self, i: int, j: int) -> float:
        key = self.key(i, j)
        if key not in self.cache:
            cos = float(self.vectors[i] @ self.vectors[j])
            self.cache[key] = (1 - self.weight) * cos + self.weight * self.lexical.overlap(i, j)
        return self.cache[key]

    def scores(self, left: Indices, right: Indices) -> Floats:
        """Scores of the pairs (left[p], right[p]), vectorised, and remembered."""
        cos = np.einsum("pd,pd->p", self.vectors[left], self.vectors[right]).astype(np.float64)
        lex = self.lexical.overlaps(left, right)
        out: Floats = (1 - self.weight) * cos + self.weight * lex
        keys = np.minimum(left, right) * self.n + np.maximum(left, right)
        self.cache.update(zip(keys.tolist(), out.tolist(), strict=True))
        return out

    def total(self, a: list[int], b: list[int]) -> float:
        """Sum of the scores of every pair across the two groups."""
        cache, n = self.cache, self.n
        keys = [i * n + j if i < j else j * n + i for i in a for j in b]
        missing = [k for k in keys if k not in cache]
        if len(missing) > _SCALAR_PAIRS:
            pairs = np.asarray(missing, dtype=np.int64)
            self.scores(pairs // n, pairs % n)
        else:
            for k in missing:
                self.score(k // n, k % n)
        # Every pair is cached now: a plain lookup per pair (the hot loop of a full pass),
        # summed in the same order as before, so the joins are the same to the last bit.
        return sum(map(cache.__getitem__, keys))


def _candidate_pairs(link: _Linkage, config: LinkConfig) -> tuple[Indices, Indices]:
    """(left, right), left < right, unique: each new lesson with its nearest lessons; never
    two old ones."""
    old = np.asarray(link.old, dtype=bool)
    new = np.flatnonzero(~old).astype(np.int64)
    near, _ = nearest(link.vectors, new, config.neighbours, config.search)
    if near.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.repeat(new, near.shape[1])
    cols = near.ravel()
    keep = cols >= 0
    rows, cols = rows[keep], cols[keep]
    left, right = np.minimum(rows, cols), np.maximum(rows, cols)
    key = np.unique(left * len(old) + right)
    return key // len(old), key % len(old)


def linked_clusters(
    ids: Sequence[str],
    old: Sequence[bool],
    vectors: Matrix,
    texts: Sequence[str],
    config: LinkConfig,
    judge: PairJudge | None = None,
) -> list[Cluster]:
    """Clusters of one scope (leader + at least one new member); see the module docstring.

    `ids` in arrival order; `old[i]`: lesson i was processed by an earlier pass;
    `vectors`: unit root-cause embeddings; `texts`: root cause + fix of each lesson;
    `judge`: asked about the pairs in the uncertain band (none: scores alone decide).
    """
    if len(ids) != len(old) or len(ids) != len(texts) or len(ids) != vectors.shape[0]:
        raise ValueError("ids, old, vectors and texts must have one entry per lesson")
    link = _Linkage(
        vectors.astype(np.float32, copy=False), Lexical(texts), config.lexical_weight, old
    )
    left, right = _candidate_pairs(link, config)
    values = link.scores(left, right)
    if judge is not None:
        values = _judged(judge, left, right, values, texts, link, config)
    above = values >= config.threshold
    left, right, values = left[above], right[above], values[above]
    order = np.lexsort((right, left, -values))  # falling score, then arrival order
    members: dict[int, list[int]] = {i: [i] for i in range(len(ids))}
    root = list(range(len(ids)))
    holds_old = [bool(x) for x in old]  # by cluster root
    refused: set[tuple[int, int, int, int]] = set()

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for i, j in zip(left[order].tolist(), right[order].tolist(), strict=True):
        a, b = find(i), find(j)
        if a == b:
            continue
        a, b = min(a, b), max(a, b)
        # A cluster only grows, so its root and size say what it holds.
        state = (a, len(members[a]), b, len(members[b]))
        if state in refused:
            continue
        if (holds_old[a] and holds_old[b]) or not _may_join(members[a], members[b], link, config):
            refused.add(state)
            continue
        root[b] = a
        holds_old[a] = holds_old[a] or holds_old[b]
        members[a] = sorted(members[a] + members.pop(b))
    return [c for group in members.values() if (c := _as_cluster(group, ids, old, link))]


def _judged(
    judge: PairJudge,
    left: Indices,
    right: Indices,
    values: Floats,
    texts: Sequence[str],
    link: _Linkage,
    config: LinkConfig,
) -> Floats:
    """The pair scores after the judge's verdicts on the band (see the module docstring)."""
    band = np.flatnonzero((values >= config.band_low) & (values < config.band_high))
    per: Counter[int] = Counter()
    chosen: list[int] = []
    for p in band[np.argsort(-values[band], kind="stable")].tolist():
        if len(chosen) >= config.max_judged:
            break
        new = [x for x in (int(left[p]), int(right[p])) if not link.old[x]]
        if any(per[x] >= config.judge_per_lesson for x in new):
            continue
        per.update(new)
        chosen.append(p)
    if not chosen:
        return values
    verdicts = judge.same_cause([(texts[left[p]], texts[right[p]]) for p in chosen])
    out: Floats = values.copy()
    for p, verdict in zip(chosen, verdicts, strict=True):
        if verdict is not None:
            out[p] = config.judged_same if verdict else 0.0
            link.cache[link.key(int(left[p]), int(right[p]))] = float(out[p])
    return out


def _may_join(a: list[int], b: list[int], link: _Linkage, config: LinkConfig) -> bool:
    """Within the size cap and on average above the threshold (the caller has checked that
    the two do not both hold an old lesson: two earlier clusters are not this pass's
    decision)."""
    if len(a) + len(b) > config.max_size:
        return False
    return link.total(a, b) / (len(a) * len(b)) >= config.threshold


def _as_cluster(
    group: list[int], ids: Sequence[str], old: Sequence[bool], link: _Linkage
) -> Cluster | None:
    if len(group) < 2:
        return None
    leader = next((i for i in group if old[i]), group[0])  # arrival order otherwise
    rest = [i for i in group if i != leader]
    return Cluster(
        leader=ids[leader],
        leader_is_old=old[leader],
        members=tuple(ids[i] for i in rest),
        similarities=tuple(round(link.score(leader, i), 4) for i in rest),
    )
