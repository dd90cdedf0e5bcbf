"""The lexical side of recall: Okapi BM25 over each scope's lesson texts.

The vector index finds lessons by meaning; BM25 finds the ones that share rare words with the
query (an exception name, `utf-8-sig`, a format string). Recall fuses both rankings (see
`memory.recall`). The text is the one the vector index embeds: symptom + root cause without
their template (`memory.dedup.index_text`), and queries are read the same way. Each scope's
postings are kept fresh from SQL by `memory.lexicalindex`.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
import weakref
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

# Symbols that carry a data format and that `\w+` drops: currency signs, percent, the
# delimiters a CSV may use instead of a comma, and a byte order mark (raw, or escaped as
# Python shows it in a header repr and as `agent.task.preview_bytes` shows it in a file's
# head). A task's data and a lesson's symptom often share little else: '$860.45' in one file,
# '$4,332.59' in the other. Each becomes a token of its own ("ufeff" for the BOM).
CURRENCY = frozenset("$€£¥")
SYMBOLS = "".join(sorted(CURRENCY)) + "%;|"
_TOKEN = re.compile(rf"\w+|[{re.escape(SYMBOLS)}]|\ufeff|\\ufeff")


# A quoted value ('$4,332.59', '18,9', 'N/A'), as symptoms, input evidence and a task start's
# data profile quote them. Its shape is what a sibling task's data shares: '$860.45' and
# '€2,165.93' share no word, but both have a currency sign before a number.
_QUOTED = re.compile(r"'([^'\n]{0,40})'")


def shape(value: str) -> str:
    """A value's format: digit runs 9, letter runs a, currency signs ¤, spaces dropped."""
    out: list[str] = []
    for ch in value.strip():
        kind = "9" if ch.isdigit() else "a" if ch.isalpha() else ch
        kind = "¤" if unicodedata.category(ch) == "Sc" else kind
        if not ch.isspace() and not (out and out[-1] == kind and kind in "9a"):
            out.append(kind)
    return "".join(out)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens, the data symbols above, and the shape of each quoted value
    that is not a plain word (a token "§<shape>", "§" for an empty value).

    Bare numbers are not tokens: they are the data's own values ('4,332.59' shares "4" with
    any list of numbers), and the shape says what matters about them."""
    tokens = [
        "ufeff" if token in ("\ufeff", "\\ufeff") else token
        for token in _TOKEN.findall(text.lower())
        if not token.isdigit()
    ]
    for value in _QUOTED.findall(text):
        form = shape(value)
        if not form or not set(form) <= {"a", "\\"}:  # not a word (nor one with escapes)
            tokens.append("§" + form)
    return tokens


class _Posting:
    """One word's documents as two flat arrays, slot and term frequency, in no order.

    `array.array` appends and pops in O(1) and numpy reads it without a copy, so scoring
    needs no rebuild after an add, however long the posting. A removal finds the slot with a
    numpy scan (tens of microseconds at 100k) and fills the hole with the last entry: cheaper
    in memory and in bulk loads than a slot -> position map per word.
    """

    __slots__ = ("slots", "tfs")

    def __init__(self) -> None:
        self.slots = array("q")
        self.tfs = array("d")

    def discard(self, slot: int) -> None:
        pos = int(np.flatnonzero(np.frombuffer(self.slots, dtype=np.int64) == slot)[0])
        last_slot, last_tf = self.slots.pop(), self.tfs.pop()
        if pos < len(self.slots):
            self.slots[pos], self.tfs[pos] = last_slot, last_tf


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) with Lucene's non-negative idf, documents added and removed.

    A score > 0 means exactly "shares at least one word with the query" (rank-bm25's idf can
    go negative for common words). Query words count as often as they occur.

    Each document has a slot; a word's posting holds (slot, tf) arrays, and scoring adds each
    query word's contributions into one dense array with numpy. Contributions are computed with
    the same float operations in the same order as the textbook loop over postings, so the
    scores are the same numbers, not just the same ranking (tests/memory/test_lexical.py).
    Not thread-safe: `LexicalIndex` serialises access.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, _Posting] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._slot: dict[str, int] = {}  # doc id -> slot
        self._ids: list[str | None] = []  # slot -> doc id; None for a free slot
        self._free: list[int] = []
        self._lengths = array("d")  # slot -> word count; 0 for a free slot
        self._total = 0
        # Live search results share `_slot` and `_ids`: a write copies them first. Results
        # are usually dropped before the next write (recall scores, ranks, returns), and then
        # nothing is copied.
        self._readers: weakref.WeakSet[_Part] = weakref.WeakSet()

    def __len__(self) -> int:
        return len(self._slot)

    def put(self, doc_id: str, text: str) -> None:
        """Add a document, or replace the one with that id."""
        terms = Counter(tokenize(text))
        if self._terms.get(doc_id) == terms:
            return  # re-read unchanged (a sighting, a status edit): same postings
        self.remove(doc_id)
        self._own()
        length = sum(terms.values())
        if self._free:
            slot = self._free.pop()
            self._ids[slot], self._lengths[slot] = doc_id, length
        else:
            slot = len(self._ids)
            self._ids.append(doc_id)
            self._lengths.append(length)
        self._slot[doc_id] = slot
        self._terms[doc_id] = terms
        self._total += length
        postings = self._postings
        for term, tf in terms.items():
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = _Posting()
            posting.slots.append(slot)
            posting.tfs.append(tf)

    def remove(self, doc_id: str) -> None:
        """Drop a document (no-op when absent)."""
        terms = self._terms.pop(doc_id, None)
        if terms is None:
            return
        self._own()
        slot = self._slot.pop(doc_id)
        self._total -= int(self._lengths[slot])
        self._ids[slot], self._lengths[slot] = None, 0
        self._free.append(slot)
        for term in terms:
            posting = self._postings[term]
            posting.discard(slot)
            if not posting.slots:
                del self._postings[term]

    def search(self, query: str, scope: str = "") -> BM25Scores:
        """BM25 scores of the documents that share a word with `query` (this index holding
        the lessons of `scope`)."""
        part = self._score(query)
        if part is not None:
            part.scope = scope
        return BM25Scores([] if part is None else [part])

    def _score(self, query: str) -> _Part | None:
        n = len(self._slot)
        if n == 0:
            return None
        avg = self._total / n
        k1, b = self.k1, self.b
        lengths = np.frombuffer(self._lengths, dtype=np.float64)
        norm = k1 * (1 - b + b * lengths / avg)
        acc = np.zeros(len(lengths))
        for term in tokenize(query):
            posting = self._postings.get(term)
            if posting is None:
                continue
            df = len(posting.slots)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            slots = np.frombuffer(posting.slots, dtype=np.int64)
            tf = np.frombuffer(posting.tfs, dtype=np.float64)
            # A slot occurs once per posting, so fancy-index += adds every contribution.
            acc[slots] += idf * tf * (k1 + 1) / (tf + norm[slots])
        part = _Part(acc, self._slot, self._ids)
        self._readers.add(part)
        return part

    def scores(self, query: str) -> dict[str, float]:
        """BM25 score of every document that shares a word with `query`."""
        return self.search(query).to_dict()

    def top(self, query: str, n: int) -> list[tuple[str, float]]:
        """The `n` best (id, score) pairs, best first, ties by id; only documents sharing a word."""
        return self.search(query).top(n)

    def _own(self) -> None:
        if self._readers:
            self._slot, self._ids = dict(self._slot), list(self._ids)
            self._readers = weakref.WeakSet()


class _Part:
    """One index's scores: dense by slot, with the slot maps as they were when scored."""

    __slots__ = ("__weakref__", "hits", "ids", "scope", "slot", "values")

    def __init__(self, acc: np.ndarray, slot: dict[str, int], ids: list[str | None]) -> None:
        self.slot, self.ids = slot, ids
        self.scope = ""  # set by `BM25.search`
        self.hits = np.flatnonzero(acc)
        self.values = acc

    def get(self, doc_id: str) -> float | None:
        s = self.slot.get(doc_id)
        if s is None or s >= len(self.values) or self.values[s] == 0:
            return None
        return float(self.values[s])

    def doc_ids(self) -> list[str]:
        ids = self.ids
        return [ids[s] or "" for s in self.hits.tolist()]  # a slot with a score is not free


class BM25Scores(Mapping[str, float]):
    """BM25 scores of one query: every document that shares a word with it, and the best ones.

    A read-only snapshot: later writes to the index do not change it. Over several scopes'
    indexes the scores are put side by side (a lesson lives in one scope).
    """

    def __init__(self, parts: list[_Part]) -> None:
        self._parts = parts

    @staticmethod
    def side_by_side(scores: Sequence[BM25Scores]) -> BM25Scores:
        """The scores of several scopes' indexes as one (a lesson lives in one scope)."""
        return BM25Scores([part for one in scores for part in one._parts])

    @property
    def scopes(self) -> list[str]:
        """The scopes searched that hold recallable lessons (from `LexicalIndex.search`)."""
        return [part.scope for part in self._parts]

    def scope_of(self, doc_id: str) -> str | None:
        """The scope whose recallable lessons hold `doc_id`, if any."""
        for part in self._parts:
            if doc_id in part.slot:
                return part.scope
        return None

    def __getitem__(self, doc_id: str) -> float:
        for part in reversed(self._parts):
            value = part.get(doc_id)
            if value is not None:
                return value
        raise KeyError(doc_id)

    def __iter__(self) -> Iterator[str]:
        for part in self._parts:
            yield from part.doc_ids()

    def __len__(self) -> int:
        return sum(len(part.hits) for part in self._parts)

    def to_dict(self) -> dict[str, float]:
        """The scores as a plain dict (faster than `dict(self)`)."""
        out: dict[str, float] = {}
        for part in self._parts:
            out.update(zip(part.doc_ids(), part.values[part.hits].tolist(), strict=True))
        return out

    def top(self, n: int) -> list[tuple[str, float]]:
        """The `n` best (id, score) pairs, best first, ties by id: what recall fuses.

        numpy finds the n-th best score; only the documents at or above it are sorted in
        Python, so the cost does not grow with the number of matching documents.
        """
        if n <= 0 or not self._parts:
            return []
        values = np.concatenate([part.values[part.hits] for part in self._parts])
        slots = np.concatenate([part.hits for part in self._parts])
        owner = np.repeat(np.arange(len(self._parts)), [len(part.hits) for part in self._parts])

        def pairs(chosen: np.ndarray) -> list[tuple[str, float]]:
            return [
                (self._parts[which].ids[slot] or "", value)
                for which, slot, value in zip(
                    owner[chosen].tolist(),
                    slots[chosen].tolist(),
                    values[chosen].tolist(),
                    strict=True,
                )
            ]

        if n >= len(values):
            return sorted(pairs(np.arange(len(values))), key=lambda pair: (-pair[1], pair[0]))
        kth = np.partition(values, len(values) - n)[len(values) - n]
        above = sorted(pairs(np.flatnonzero(values > kth)), key=lambda pair: (-pair[1], pair[0]))
        # Common words make long runs of equal scores: the smallest ids of the run at the
        # n-th score fill the rest, found without sorting the run.
        tied = heapq.nsmallest(n - len(above), pairs(np.flatnonzero(values == kth)))
        return above + tied
