"""The lexical side of recall: BM25 postings and their freshness against SQL."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, Memory
from memory.lexical import BM25, shape, tokenize


def test_bm25_removal_equals_a_fresh_index() -> None:
    docs = {"a": "could not convert string to float", "b": "utf-8 byte order mark", "c": "float"}
    grown = BM25()
    for doc_id, text in docs.items():
        grown.put(doc_id, text)
    grown.put("d", "float string mark extra words")
    grown.remove("d")
    grown.put("b", "utf-8 byte order mark")  # replacing keeps one copy
    fresh = BM25()
    for doc_id, text in docs.items():
        fresh.put(doc_id, text)
    query = "ValueError: could not convert string to float: 'x' mark"
    assert grown.scores(query) == pytest.approx(fresh.scores(query))
    assert set(fresh.scores(query)) == {"a", "b", "c"} and len(grown) == 3
    assert fresh.top(query, 1)[0][0] == "a"


def lesson(word: str) -> LessonDraft:
    return LessonDraft(
        error_type="runtime_error", symptom=f"{word} failed", root_cause=f"{word} cause", fix=word
    )


def test_postings_follow_sql_across_writers(tmp_path: Path) -> None:
    path = str(tmp_path / "store.sqlite3")
    with Memory.open(path, embedder=HashEmbedder()) as reader:
        assert reader._lexical.scores("zulu yankee", ["default"]) == {}
        with Memory.open(path, embedder=HashEmbedder()) as writer:  # another process, in effect
            zulu = writer.add(lesson("zulu")).lesson
            assert zulu is not None
            assert set(reader._lexical.scores("zulu yankee", ["default"])) == {zulu.id}
            yankee = writer.add(lesson("yankee")).lesson
            assert yankee is not None
            assert set(reader._lexical.scores("zulu yankee", ["default"])) == {zulu.id, yankee.id}
            writer.set_status(zulu.id, "deprecated")
            assert set(reader._lexical.scores("zulu yankee", ["default"])) == {yankee.id}
            writer.update(yankee.id, symptom="xray failed", root_cause="xray cause")
            assert reader._lexical.scores("zulu yankee", ["default"]) == {}
            assert set(reader._lexical.scores("xray", ["default"])) == {yankee.id}
            writer.update(yankee.id, scope="elsewhere")
            assert reader._lexical.scores("xray", ["default"]) == {}
            assert set(reader._lexical.scores("xray", ["default", "elsewhere"])) == {yankee.id}


class ReferenceBM25:
    """The textbook loop over postings (the implementation BM25 replaced), to compare with."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs: dict[str, Counter[str]] = {}

    def put(self, doc_id: str, text: str) -> None:
        self.docs[doc_id] = Counter(tokenize(text))

    def remove(self, doc_id: str) -> None:
        self.docs.pop(doc_id, None)

    def scores(self, query: str) -> dict[str, float]:
        n = len(self.docs)
        if n == 0:
            return {}
        lengths = {d: sum(terms.values()) for d, terms in self.docs.items()}
        avg = sum(lengths.values()) / n
        out: dict[str, float] = {}
        for term in tokenize(query):
            posting = {d: terms[term] for d, terms in self.docs.items() if term in terms}
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for doc_id, tf in posting.items():
                norm = self.k1 * (1 - self.b + self.b * lengths[doc_id] / avg)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        return out


# A small vocabulary with a Zipf-like skew: a few words in most documents, many rare ones.
WORDS = ["error", "the", "valueerror", "in", "of", "float", "utf", "8", "sig", "bom"] + [
    f"w{i}" for i in range(60)
]


def random_text(rng: random.Random) -> str:
    return " ".join(
        rng.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))], k=rng.randint(1, 25))
    )


def best(scores: dict[str, float], n: int) -> list[str]:
    return [d for d, _ in sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:n]]


@pytest.mark.parametrize("seed", range(8))
def test_bm25_scores_equal_the_reference_through_adds_removes_and_replacements(seed: int) -> None:
    rng = random.Random(seed)
    fast, slow = BM25(), ReferenceBM25()
    held = []  # results taken before later writes: snapshots, they must not move
    for step in range(400):
        doc_id = f"d{rng.randrange(120)}"  # ids repeat: replacements, and removes of absent ids
        if rng.random() < 0.3:
            fast.remove(doc_id)
            slow.remove(doc_id)
        else:
            text = random_text(rng)
            fast.put(doc_id, text)
            slow.put(doc_id, text)
        if step % 10 == 0:
            query = random_text(rng) + " unseen " + rng.choice(WORDS)  # repeated words count
            expected = slow.scores(query)
            found = fast.search(query)
            assert found.to_dict() == expected  # the same floats, not just close ones
            assert dict(found) == expected and len(found) == len(expected)
            assert all(found.get(d) == expected.get(d) for d in [*expected, "d999", doc_id])
            for n in (0, 1, 5, 1000):
                assert [d for d, _ in found.top(n)] == best(expected, n)
            held.append((found, expected))
    assert len(fast) == len(slow.docs)
    for found, expected in held:
        assert found.to_dict() == expected


def test_top_breaks_long_ties_by_id_like_recall() -> None:
    bm25 = BM25()
    for i in random.Random(3).sample(range(60), 60):  # slots in shuffled id order
        bm25.put(f"d{i:02d}", "error" if i % 2 else "error in other words")
    found = bm25.search("error")
    assert len({score for _, score in found.top(30)}) == 1  # one run of equal scores
    assert [d for d, _ in found.top(7)] == ["d01", "d03", "d05", "d07", "d09", "d11", "d13"]
    assert [d for d, _ in found.top(35)] == best(found.to_dict(), 35)
    assert found.top(35)[-1][0] == "d08"  # the next run starts with the smallest id


def test_scores_of_several_scopes_sit_side_by_side(tmp_path: Path) -> None:
    with Memory.open(str(tmp_path / "store.sqlite3"), embedder=HashEmbedder()) as memory:
        here = memory.add(lesson("zulu")).lesson
        there = memory.add(lesson("zulu zulu").model_copy(update={"scope": "other"})).lesson
        assert here is not None and there is not None
        found = memory._lexical.search("zulu cause", ["default", "other", "default"])
        assert set(found) == {here.id, there.id} and len(found) == 2
        assert found.to_dict() == {
            **memory._lexical.scores("zulu cause", ["default"]),
            **memory._lexical.scores("zulu cause", ["other"]),
        }
        assert found.top(2) == sorted(found.items(), key=lambda pair: (-pair[1], pair[0]))
        assert memory._lexical.search("nothing shared", ["default", "other"]).top(3) == []


def test_bm25_scores_shared_words_only() -> None:
    bm25 = BM25()
    for doc_id, text in (("a", "could not convert string to float"),
                         ("b", "utf-8 byte order mark"), ("c", "float float")):  # fmt: skip
        bm25.put(doc_id, text)
    scores = bm25.scores("ValueError: could not convert string to float: '$1,299.99'")
    assert scores["a"] > scores["c"] > 0 and "b" not in scores


def test_data_symbols_are_tokens_and_a_bom_is_one_however_written() -> None:
    assert tokenize("'$860.45'; '25 %' a|b £9 €9") == [
        "$", ";", "%", "a", "|", "b", "£", "€", "§¤9.9", "§9%",
    ]  # fmt: skip
    # Raw (as read), escaped (a header's repr, a file preview): the same token.
    assert tokenize("\ufeffsku") == tokenize("['\\ufeffsku']") == ["ufeff", "sku"]


def test_a_task_heads_symbols_find_the_lesson_of_that_data() -> None:
    bm25 = BM25()
    bm25.put("percent", "could not convert string to float: '72.5%' values '25 %', '+8.6%'")
    bm25.put("currency", "could not convert string to float: '$860.45' values '$4,332.59'")
    bm25.put("bom", "KeyError: 'sku' the header as Python reads it: ['\\ufeffsku', 'qty']")
    # Heads of other files: no word in common with the lessons' values, only the symbols.
    assert bm25.top("--- kpis.csv ---\nregion,growth\nnorth,+3.1%", 1)[0][0] == "percent"
    assert bm25.top("--- rent.csv ---\ncity,rent\nOslo,$1,200", 1)[0][0] == "currency"
    assert bm25.top("--- stock.csv ---\n\\ufeffitem,count", 1)[0][0] == "bom"


def test_a_quoted_values_shape_is_a_token_whatever_its_digits_and_currency() -> None:
    assert shape("$4,332.59") == shape(" €2,165.93 ") == "¤9,9.9"
    assert shape("25 %") == shape("7.5%")[0] + "%" == "9%"
    assert shape("Feb 04, 2026") == "a9,9"
    tokens = tokenize("values: '$860.45', '', 'N/A', 'qty'")
    # A plain word is a word token only; an empty value has the shape "§".
    assert [t for t in tokens if t.startswith("§")] == ["§¤9.9", "§", "§a/a"]


def test_shapes_find_the_lesson_of_data_of_the_same_kind_in_other_words() -> None:
    bm25 = BM25()
    bm25.put("comma", "could not convert string to float: '18,9' values '-2,7', '19,5'")
    bm25.put("currency", "could not convert string to float: '$860.45' values '$4,332.59'")
    bm25.put("empty", "could not convert string to float: '' values '79', '-', 'n/a'")
    # Another currency and other digits: only the shapes are shared.
    assert bm25.top("values of column 'cost': '€ 414', '€2,165.93'", 1)[0][0] == "currency"
    assert bm25.top("values of column 'litres': '54,94', '30,34'", 1)[0][0] == "comma"
    assert bm25.top("values of column 'price': '4.03', '', 'N/A'", 1)[0][0] == "empty"
