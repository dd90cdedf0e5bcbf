"""Pair signals for consolidation without a model, for scripts/bench_consolidate_signals.py.

Each signal scores every pair of lessons of one scope; `average_linkage` clusters on a
weighted sum with the rule `retrospectives.link` uses (pairs in falling score order join
two clusters only if the average score over every pair across them reaches the threshold,
at most `max_size` lessons), on all pairs instead of a neighbour graph (the labelled sets
are small). With the pass's own score (0.4 x root-cause cosine + 0.6 x IDF word overlap of
root cause + fix) it gives the clusters of the pass (tests/test_bench_consolidate_signals.py).

Signals beyond today's:
- `signature`: what a run quotes of the data and the code, as tokens: the shape of each
  quoted or separator-bearing value (digit runs after the first keep their length, so
  '1,299.99' -> 9,999.99 and '21,4' -> 9,9 differ), short non-word literals (',' ';' '%'),
  names called (`float(`, `.replace(`), keyword arguments with their value
  (`encoding='utf-8-sig'`), replacement pairs (`.replace(',', '')` vs `.replace(',', '.')`)
  and strftime codes (`%z`).
- `normalise`: the text without what one run names and the next does not (file names,
  snake_case names of its own code, quoted values, numbers).
- `soft_overlap`: IDF word overlap where a word also matches its nearest word of the other
  text when their embeddings (each word embedded alone) reach `tau` (a soft cosine).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from memory.embeddings import Embedder
from retrospectives.overlap import words

Scores = NDArray[np.float64]

_QUOTED = re.compile(r"'([^'\n]{0,40})'|\"([^\"\n]{0,40})\"")
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
_KEYWORD = re.compile(r"\b([a-z_]+)\s*=\s*'([^'\n]{0,20})'")
_REPLACE = re.compile(r"\.replace\(\s*'([^'\n]{0,6})'\s*,\s*'([^'\n]{0,6})'\s*\)")
_NUMBER = re.compile(r"(?<![\w.,])[-+(]?[$€£¥]?\d[\d.,]*\d%?|\d%")
_FORMAT = re.compile(r"%[a-zA-Z]")
_FILE = re.compile(r"\b[\w-]+\.(?:csv|tsv|json|jsonl|ndjson|txt|log|xlsx?|py)\b", re.IGNORECASE)
_SNAKE = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b")
_VALUE = re.compile(r"'[^'\n]{4,40}'|\"[^\"\n]{4,40}\"")
_PIECE = re.compile(r"\d+|[A-Za-z]+|\s+|.")


def value_shape(value: str) -> str:
    """A value's format: the first digit run 9, later runs one 9 per digit (at most 4),
    letter runs a, currency signs ¤, spaces dropped."""
    out: list[str] = []
    first = True
    for piece in _PIECE.findall(value.strip()):
        if piece.isdigit():
            out.append("9" if first else "9" * min(len(piece), 4))
            first = False
        elif piece.isalpha():
            out.append("a")
        elif not piece.isspace():
            out.append("¤" if piece in "$€£¥" else piece)
    return "".join(out)


def signature(text: str) -> frozenset[str]:
    """The data and code a lesson quotes, as tokens (see the module docstring)."""
    out = {"call:" + name.rsplit(".", 1)[-1].lower() for name in _CALL.findall(text)}
    out.update(f"kw:{key}={value.lower()}" for key, value in _KEYWORD.findall(text))
    out.update(f"replace:{old}>{new}" for old, new in _REPLACE.findall(text))
    for single, double in _QUOTED.findall(text):
        value = (single or double).strip()
        if value and len(value) <= 3 and not value.isalnum():
            out.add("literal:" + value)
        if any(c.isdigit() for c in value):
            out.add("shape:" + value_shape(value))
    out.update("shape:" + value_shape(v) for v in _NUMBER.findall(text) if set(v) & set(",.%$€£("))
    out.update("format:" + code for code in _FORMAT.findall(text))
    return frozenset(out)


def normalise(text: str) -> str:
    """The text without file names, snake_case names, quoted values and numbers."""
    text = _FILE.sub("the file", text)
    text = _VALUE.sub("value", text)
    text = _SNAKE.sub("name", text)
    text = _NUMBER.sub("number", text)
    return re.sub(r"\s+", " ", text).strip()


def idf_overlap(token_sets: Sequence[frozenset[str]]) -> Scores:
    """Shared IDF mass over the smaller set's mass for every pair (retrospectives.overlap's
    formula, IDF counted over these sets); the diagonal is 1."""
    n = len(token_sets)
    df = Counter(t for tokens in token_sets for t in tokens)
    idf = {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}
    mass = [sum(idf[t] for t in tokens) for tokens in token_sets]
    out = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            low = min(mass[i], mass[j])
            shared = sum(idf[t] for t in token_sets[i] & token_sets[j])
            out[i, j] = out[j, i] = shared / low if low > 0 else 0.0
    return out


def word_sets(texts: Iterable[str]) -> list[frozenset[str]]:
    """The content words of each text, as the pass reads them (retrospectives.overlap)."""
    return [words(t) for t in texts]


def soft_overlap(texts: Sequence[str], embedder: Embedder, tau: float) -> Scores:
    """IDF word overlap where a word counts as present with weight cos(w, v) when the other
    text's nearest word v is at least `tau` similar (each word embedded on its own); the
    larger of the two directions. Every distinct word is embedded once."""
    sets = [sorted(ws) for ws in word_sets(texts)]
    vocab = sorted({w for ws in sets for w in ws})
    if not vocab:
        return np.eye(len(texts))
    vectors = np.asarray(embedder.embed(vocab), dtype=np.float32)
    sim = vectors @ vectors.T
    sim = np.where(sim >= tau, sim, 0.0)
    np.fill_diagonal(sim, 1.0)
    n = len(texts)
    df = Counter(w for ws in sets for w in ws)
    position = {w: k for k, w in enumerate(vocab)}
    index = [np.asarray([position[w] for w in ws], dtype=np.int64) for ws in sets]
    weight = [np.asarray([math.log((n + 1) / (df[w] + 0.5)) for w in ws]) for ws in sets]
    out = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            if not len(index[i]) or not len(index[j]):
                continue
            block = sim[np.ix_(index[i], index[j])]
            forward = float((weight[i] * block.max(axis=1)).sum() / weight[i].sum())
            backward = float((weight[j] * block.max(axis=0)).sum() / weight[j].sum())
            out[i, j] = out[j, i] = max(forward, backward)
    return out


def cosines(vectors: Sequence[Sequence[float]]) -> Scores:
    """Cosine of every pair of unit vectors."""
    matrix = np.asarray(vectors, dtype=np.float64)
    out: Scores = matrix @ matrix.T
    return out


def average_linkage(scores: Scores, threshold: float, max_size: int = 24) -> list[list[int]]:
    """Clusters (every lesson in one, singletons too) by retrospectives.link's rule on all
    pairs: falling score, then arrival order; a join needs the average cross score."""
    n = len(scores)
    left, right = np.triu_indices(n, 1)
    values = scores[left, right]
    keep = values >= threshold
    left, right, values = left[keep], right[keep], values[keep]
    order = np.lexsort((right, left, -values))
    root = list(range(n))
    members: dict[int, list[int]] = {i: [i] for i in range(n)}

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for i, j in zip(left[order].tolist(), right[order].tolist(), strict=True):
        a, b = sorted((find(i), find(j)))
        if a == b or len(members[a]) + len(members[b]) > max_size:
            continue
        if float(scores[np.ix_(members[a], members[b])].mean()) >= threshold:
            root[b] = a
            members[a] = sorted(members[a] + members.pop(b))
    return list(members.values())


def quality(clusters: Sequence[Sequence[int]], labels: Sequence[str]) -> tuple[float, float]:
    """(purity, duplicate rate) as scripts/bench_consolidate_quality.py counts them."""
    majority = [Counter(labels[i] for i in c).most_common(1)[0] for c in clusters]
    purity = sum(count for _, count in majority) / len(labels)
    names = [label for label, _ in majority]
    return purity, (len(names) - len(set(names))) / len(names)


def nearest_same(scores: Scores, labels: Sequence[str], single: str = "single_") -> float:
    """Share of the lessons of a group whose best-scoring other lesson has their root cause
    (what any threshold on this score works with)."""
    masked = scores.copy()
    np.fill_diagonal(masked, -np.inf)
    grouped = [i for i, label in enumerate(labels) if not label.startswith(single)]
    if not grouped:
        return float("nan")
    return sum(labels[int(np.argmax(masked[i]))] == labels[i] for i in grouped) / len(grouped)
