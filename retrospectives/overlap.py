"""Word overlap of lesson texts, weighted by rarity (IDF): the lexical side of the link score.

    overlap(a, b) = idf(shared words) / min(idf(words of a), idf(words of b))

IDF is counted over the texts given (one scope), so "file" or "value" count for little and
"utf-8-sig" or "delimiter" for much. Texts become postings once (lesson, word id) -> sorted
keys), so the overlap of a million pairs is a few numpy calls: every word of the first
lesson of each pair is looked up among the second lesson's keys (binary search), and the
IDF of the words found is summed per pair. `overlap(i, j)` scores one pair the same way.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

Indices = NDArray[np.int64]
Floats = NDArray[np.float64]

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


class Lexical:
    """IDF-weighted word overlap of texts, IDF counted over the texts given."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.words = [words(t) for t in texts]
        df = Counter(w for ws in self.words for w in ws)
        n = len(texts)
        vocab = {w: i for i, w in enumerate(sorted(df))}
        self.idf_of = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}
        self.idf: Floats = np.zeros(len(vocab), dtype=np.float64)
        for w, i in vocab.items():
            self.idf[i] = self.idf_of[w]
        ids = [np.asarray(sorted(vocab[w] for w in ws), dtype=np.int64) for ws in self.words]
        counts = np.asarray([len(x) for x in ids], dtype=np.int64)
        self.indptr: Indices = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.indices: Indices = (
            np.concatenate(ids) if ids and counts.sum() else np.zeros(0, dtype=np.int64)
        )
        self.width = max(1, len(vocab))
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        self.keys: Indices = rows * self.width + self.indices  # sorted: rows, then word ids
        mass = np.bincount(rows, weights=self.idf[self.indices], minlength=n)
        self.mass: Floats = mass.astype(np.float64)

    def overlap(self, i: int, j: int) -> float:
        """Shared IDF mass over the smaller text's mass, in [0, 1]."""
        low = min(self.mass[i], self.mass[j])
        if low <= 0:
            return 0.0
        return sum(self.idf_of[w] for w in self.words[i] & self.words[j]) / float(low)

    def overlaps(self, left: Indices, right: Indices) -> Floats:
        """`overlap(left[p], right[p])` for every pair p, vectorised."""
        size = len(left)
        if size == 0:
            return np.zeros(0, dtype=np.float64)
        counts = self.indptr[left + 1] - self.indptr[left]
        pair = np.repeat(np.arange(size, dtype=np.int64), counts)
        ends = np.cumsum(counts)
        offset = np.arange(int(ends[-1]) if size else 0, dtype=np.int64) - np.repeat(
            ends - counts, counts
        )
        word = self.indices[np.repeat(self.indptr[left], counts) + offset]
        probe = right[pair] * self.width + word
        at = np.minimum(np.searchsorted(self.keys, probe), max(len(self.keys) - 1, 0))
        found = self.keys[at] == probe if len(self.keys) else np.zeros(len(probe), dtype=bool)
        shared = np.bincount(pair, weights=self.idf[word] * found, minlength=size)
        low = np.minimum(self.mass[left], self.mass[right])
        return np.divide(shared, low, out=np.zeros(size, dtype=np.float64), where=low > 0)
