"""Clustering by root cause across error types: average linkage on a neighbour graph.

One root cause shows up under several error types (a thousands separator is a `ValueError`
in one run and a wrong total, `check_failed`, in the next), so a scope's lessons are
clustered together, whatever their type, on a pair score that holds on unseen wording:

    score(a, b) = (1 - w) * cosine(root-cause embeddings) + w * lexical(a, b)
    lexical(a, b) = idf(shared words) / min(idf(words of a), idf(words of b))

over the words of root cause + fix (IDF within the scope, so "file" or "value" count for
little and "utf-8-sig" or "delimiter" for much). MiniLM scores paraphrases of one root
cause at 0.3-0.6, as it scores some different root causes: the lexical side is what
separates "strip the grouping commas" from "replace the decimal comma".

Pairs: each new lesson with its `neighbours` nearest lessons by cosine (one matrix product
per batch), never two old ones (they stand for clusters earlier passes made). Linkage:
pairs in falling score order join two clusters only if the *average* score over every pair
across them still reaches the threshold (average linkage: no chaining through one lucky
pair), the result holds at most one old lesson (its leader) and at most `max_size` lessons.
Cost: O(new x all) for the neighbours, O(new x neighbours) scores, and the linkage checks
are bounded by `max_size` squared.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from retrospectives.cluster import Cluster, Matrix

_WORD = re.compile(r"[a-z0-9_]+|[$€£%;\\'\"]")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "and",
        "or",
        "in",
        "on",
        "for",
        "is",
        "are",
        "be",
        "it",
        "its",
        "with",
        "as",
        "by",
        "that",
        "this",
        "at",
        "from",
        "not",
        "but",
        "so",
        "than",
        "then",
        "when",
        "which",
        "was",
        "were",
        "has",
        "have",
        "into",
        "every",
        "each",
        "all",
        "only",
        "before",
        "after",
    ]
)


def words(text: str) -> frozenset[str]:
    """The content words (and symbols such as '$', '%', ';') of a text, lower-cased."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


@dataclass(frozen=True)
class LinkConfig:
    """Knobs of the linkage; chosen on both halves of both labelled sets (README)."""

    threshold: float = 0.35
    lexical_weight: float = 0.6
    neighbours: int = 10
    max_size: int = 24
    batch: int = 512


class Lexical:
    """IDF-weighted word overlap of texts, IDF counted over the texts given."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.words = [words(t) for t in texts]
        df = Counter(w for ws in self.words for w in ws)
        n = len(texts)
        self.idf = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}
        self.mass = [sum(self.idf[w] for w in ws) for ws in self.words]

    def overlap(self, i: int, j: int) -> float:
        """Shared IDF mass over the smaller text's mass, in [0, 1]."""
        low = min(self.mass[i], self.mass[j])
        if low <= 0:
            return 0.0
        return sum(self.idf[w] for w in self.words[i] & self.words[j]) / low


@dataclass
class _Linkage:
    vectors: Matrix
    lexical: Lexical
    weight: float
    old: Sequence[bool]
    cache: dict[tuple[int, int], float] = field(default_factory=dict)

    def score(self, i: int, j: int) -> float:
        key = (i, j) if i < j else (j, i)
        if key not in self.cache:
            cos = float(self.vectors[i] @ self.vectors[j])
            self.cache[key] = (1 - self.weight) * cos + self.weight * self.lexical.overlap(i, j)
        return self.cache[key]


def _candidate_pairs(
    vectors: Matrix, old: Sequence[bool], k: int, batch: int
) -> set[tuple[int, int]]:
    """(i, j), i < j: each new lesson with its k nearest lessons; never two old ones."""
    new = [i for i, is_old in enumerate(old) if not is_old]
    pairs: set[tuple[int, int]] = set()
    k = min(k, len(old) - 1)
    if k <= 0:
        return pairs
    for start in range(0, len(new), batch):
        rows = new[start : start + batch]
        sims = vectors[rows] @ vectors.T
        sims[np.arange(len(rows)), rows] = -np.inf  # not itself
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for row, cols in zip(rows, nearest, strict=True):
            pairs.update((min(row, int(c)), max(row, int(c))) for c in cols)
    return pairs


def linked_clusters(
    ids: Sequence[str],
    old: Sequence[bool],
    vectors: Matrix,
    texts: Sequence[str],
    config: LinkConfig,
) -> list[Cluster]:
    """Clusters of one scope (leader + at least one new member); see the module docstring.

    `ids` in arrival order; `old[i]`: lesson i was processed by an earlier pass;
    `vectors`: unit root-cause embeddings; `texts`: root cause + fix of each lesson.
    """
    if len(ids) != len(old) or len(ids) != len(texts) or len(ids) != vectors.shape[0]:
        raise ValueError("ids, old, vectors and texts must have one entry per lesson")
    link = _Linkage(
        vectors.astype(np.float32, copy=False), Lexical(texts), config.lexical_weight, old
    )
    pairs = _candidate_pairs(link.vectors, old, config.neighbours, config.batch)
    scored = sorted(((link.score(i, j), i, j) for i, j in pairs), key=lambda t: (-t[0], t[1], t[2]))
    members: dict[int, list[int]] = {i: [i] for i in range(len(ids))}
    root = list(range(len(ids)))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for value, i, j in scored:
        if value < config.threshold:
            break
        a, b = find(i), find(j)
        if a == b or not _may_join(members[a], members[b], link, config):
            continue
        a, b = min(a, b), max(a, b)
        root[b] = a
        members[a] = sorted(members[a] + members.pop(b))
    return [c for group in members.values() if (c := _as_cluster(group, ids, old, link))]


def _may_join(a: list[int], b: list[int], link: _Linkage, config: LinkConfig) -> bool:
    if len(a) + len(b) > config.max_size:
        return False
    if any(link.old[i] for i in a) and any(link.old[i] for i in b):
        return False  # two earlier clusters: not this pass's decision
    total = sum(link.score(i, j) for i in a for j in b)
    return total / (len(a) * len(b)) >= config.threshold


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
