"""Recall's data gate (memory.recall.fits_data, memory.lexical.data_marks) on a real in-memory
store, with an embedder that puts every lesson at the same cosine: only the data decides."""

from __future__ import annotations

from collections.abc import Sequence

from memory import LessonDraft, LessonQuery, Memory
from memory.lexical import data_marks
from memory.types import RecallStage


class FlatEmbedder:
    """Queries and symptoms ("ERR") on one axis, so every lesson is at cosine 1 to every
    query; each root cause + fix on an axis of its own, so none is a duplicate of another."""

    model_id = "test/flat"
    dim = 5
    CAUSES = ("currency", "byte order", "wrong column", "renamed")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        axis = next((i + 1 for i, c in enumerate(self.CAUSES) if c in text), 0)
        return [1.0 if i == (0 if "ERR" in text else axis) else 0.0 for i in range(self.dim)]


def _lesson(symptom: str, cause: str) -> LessonDraft:
    return LessonDraft(scope="s", error_type="ValueError", symptom=f"ERR {symptom}",
                       root_cause=cause, fix=f"fix for {cause}")  # fmt: skip


MONEY = _lesson(
    "could not convert string to float: '€ 414' (in the input: values of column 'amount': "
    "'€ 414', '€2,165.93')",
    "amounts carry a currency sign and thousands separators",
)
HEADER = _lesson(
    "invalid literal for int() with base 10: 'qty' (in the input: lines of stock.csv that "
    "contain 'qty': '\\ufeffsku,warehouse,qty')",
    "the header row starts with a byte order mark",
)
PLAIN = _lesson("int() of '18,9' found in the data", "the wrong column was read")

DOLLARS = (
    "ERR ValueError: could not convert string to float: '$860.45' (in the input: values of "
    "column 'amount' in invoices.csv: '$860.45', '$647', '$4,332.59', '-$120')"
)


def _recall(memory: Memory, text: str, stage: RecallStage = "reflection") -> list[str]:
    query = LessonQuery(text=text, scope="s", stage=stage, error_types=("ValueError",))
    return sorted(h.lesson.root_cause for h in memory.recall(query))


def test_marks_are_the_data_symbols_and_the_currency_class() -> None:
    assert data_marks("'$860.45' and '€ 414'") == {"$", "€", "¤"}
    assert data_marks("'\\ufeffsku,warehouse,qty'") == {"ufeff"}
    assert data_marks("'12.5%' in 'a;b' or 'a|b'") == {"%", ";", "|"}
    # Shapes are not marks: another date or decimal format is the same kind of data.
    assert data_marks("'18,9', '2026-03-02T05:05', 'N/A', 'amount'") == frozenset()


def test_a_lesson_about_other_data_is_not_recalled_at_reflection() -> None:
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER, PLAIN])
        # '$' shares the currency class with the euro lesson, nothing with the BOM one; the
        # lesson that holds no data symbol is not judged by it.
        assert _recall(memory, DOLLARS) == sorted([MONEY.root_cause, PLAIN.root_cause])
        # The BOM's own error recalls the BOM lesson and not the money one.
        bom = "ERR invalid literal for int(): 'qty' (in the input: '\\ufeffid,qty')"
        assert _recall(memory, bom) == sorted([HEADER.root_cause, PLAIN.root_cause])


def test_a_query_that_holds_no_data_symbol_is_not_gated() -> None:
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER, PLAIN])
        assert len(_recall(memory, "ERR ValueError: '18,9' in the totals")) == 3


def test_the_type_gate_sees_only_lessons_that_fit_the_data() -> None:
    """A ValueError whose only ValueError lesson is about other data gets no lesson at all,
    not that lesson's neighbours of other types."""
    other = LessonDraft(scope="s", error_type="KeyError", symptom="ERR a key went missing",
                        root_cause="a column renamed", fix="read the new name")  # fmt: skip
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([HEADER, other])
        assert _recall(memory, DOLLARS) == []


def test_the_stages_gated_are_the_store_s_choice() -> None:
    """Task starts are gated by default, like reflections; a store may gate reflections only."""
    reflection_only = {"data_gate": ("reflection",)}
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4, **reflection_only) as memory:  # type: ignore[arg-type]
        memory.add_many([MONEY, HEADER])
        assert len(_recall(memory, DOLLARS, stage="seed")) == 2
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER])
        assert _recall(memory, DOLLARS, stage="seed") == [MONEY.root_cause]
        # A query with its own cut (a person searching) is never gated.
        query = LessonQuery(text=DOLLARS, scope="s", stage="seed", min_similarity=0.4)
        assert len(memory.recall(query)) == 2
