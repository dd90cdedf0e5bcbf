"""Recall's data gate (memory.datagate, memory.marks.data_marks) on a real in-memory
store, with an embedder that puts every lesson at the same cosine: only the data decides."""

from __future__ import annotations

from collections.abc import Sequence

from memory import LessonDraft, LessonQuery, Memory
from memory.marks import DECIMAL_COMMA, DECIMAL_POINT, data_marks, decimal_marks
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
PLAIN = _lesson("int() of '18 units' found in the data", "the wrong column was read")

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
        assert len(_recall(memory, "ERR ValueError: '18 units' in the totals")) == 3


def test_the_type_gate_sees_only_lessons_that_fit_the_data() -> None:
    """A ValueError whose only ValueError lesson is about other data gets no lesson at all,
    not that lesson's neighbours of other types."""
    other = LessonDraft(scope="s", error_type="KeyError", symptom="ERR a key went missing",
                        root_cause="a column renamed", fix="read the new name")  # fmt: skip
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([HEADER, other])
        assert _recall(memory, DOLLARS) == []


def test_the_stages_gated_are_the_store_s_choice() -> None:
    """Task starts (with their data as surface views) are gated by default, like
    reflections; a store may gate reflections only."""
    start = LessonQuery(text=f"ERR sum the amounts\n{DOLLARS}", scope="s", surface=(DOLLARS,))
    reflection_only = {"data_gate": ("reflection",)}
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4, **reflection_only) as memory:  # type: ignore[arg-type]
        memory.add_many([MONEY, HEADER])
        assert len(memory.recall(start)) == 2
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER])
        assert [h.lesson.root_cause for h in memory.recall(start)] == [MONEY.root_cause]
        # A seed text without data views (an assistant's text through MCP) is not judged,
        # nor is a query with its own cut (a person searching).
        assert len(memory.recall(start.model_copy(update={"surface": ()}))) == 2
        assert len(memory.recall(start.model_copy(update={"min_similarity": 0.4}))) == 2


def test_prose_punctuation_and_a_goal_s_words_are_not_data() -> None:
    """A root cause's ';' and a goal's strftime '%' are prose: the timestamp lesson reaches a
    task start whose data quotes no symbol, and the '%' lesson is not let in by the goal."""
    offsets = LessonDraft(scope="s", error_type="TypeError", symptom="ERR naive and aware",
                          root_cause="offsets differ (+02:00, Z); renamed zones break it",
                          fix="make every value aware")  # fmt: skip
    percent = _lesson("could not convert string to float: '12.5%'", "a currency-like '%' sign")
    head = "--- logins.csv ---\nuser,start\nana,2025-03-14T09:00:00+02:00"
    goal = "ERR write each login's start as %Y-%m-%d to out.csv"
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([offsets, percent])
        query = LessonQuery(text=f"{goal}\n{head}", scope="s", surface=(head,))
        assert sorted(h.lesson.root_cause for h in memory.recall(query)) == sorted(
            [offsets.root_cause, percent.root_cause]
        )
        assert data_marks("offsets (+02:00, Z); mixing", data=False) == frozenset()
        assert data_marks("the file's header; it's 'id;qty'", data=False) == {";"}


def test_a_task_s_data_judges_strictly_at_every_stage() -> None:
    """Given the task's data (`LessonQuery.data`), a lesson quoting a data symbol reaches the
    task only if its data holds one, whatever the query's text quotes (a wrong total quotes
    nothing); a lesson quoting none is not judged."""
    plain_data = ("--- tickets.csv ---\nid,opened\n1,2026-03-02",)
    euro_data = ("values of column 'cost' in expenses.csv: '€ 414', '€2,165.93'",)
    bom_data = ("the header of stock.csv as Python reads it: ['\\ufeffsku', 'qty']",)
    wrong_total = "ERR check failed: the total for 'travel' is 0, expected 812.5"
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER, PLAIN])
        for stage in ("seed", "reflection"):

            def recall(data: tuple[str, ...], text: str = wrong_total) -> list[str]:
                query = LessonQuery(text=text, scope="s", stage=stage, data=data)  # noqa: B023
                return sorted(h.lesson.root_cause for h in memory.recall(query))

            # Without the data, a text quoting no symbol is not judged: all three.
            assert len(recall(())) == 3
            assert recall(plain_data) == [PLAIN.root_cause]
            assert recall(euro_data) == sorted([MONEY.root_cause, PLAIN.root_cause])
            assert recall(bom_data) == sorted([HEADER.root_cause, PLAIN.root_cause])
            # A reflection's text adds what it quotes (a value the views missed); a task
            # start's text is its goal, not data.
            widened = {"seed": [HEADER, PLAIN], "reflection": [HEADER, MONEY, PLAIN]}[stage]
            assert recall(bom_data, DOLLARS) == sorted(x.root_cause for x in widened)
            # Blank views are no data: not judged.
            assert len(recall(("", "  "))) == 3
        # A person's search (its own cut) is not gated.
        query = LessonQuery(text=wrong_total, scope="s", data=plain_data, min_similarity=0.4)
        assert len(memory.recall(query)) == 3


def test_a_currency_code_beside_a_number_is_a_currency() -> None:
    assert data_marks("'USD 1,625', '3,725 EUR'") == {"¤"}
    assert data_marks("the USD column, order 1984, SO-880") == frozenset()
    rentals = ("values of column 'rent' in rentals.csv: 'USD 1,625', '3,725 USD'",)
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER])
        query = LessonQuery(text="ERR sum the rents", scope="s", stage="seed", data=rentals)
        assert [h.lesson.root_cause for h in memory.recall(query)] == [MONEY.root_cause]


LAB = _lesson(
    "could not convert string to float: '2,31' (in the input: values of column 'value': "
    "'2,31', '135,30')",
    "the value uses a comma as the decimal mark",
)


def test_decimal_marks_are_certain_or_nothing() -> None:
    assert decimal_marks("'2,31', '1.010,9'") == {DECIMAL_COMMA}
    assert decimal_marks("'$4,332.59', ' €860.45 ', 'USD 1,625.50'") == {DECIMAL_POINT}
    # A thousands group alone, a version, a date, a whole number: no mark is certain.
    assert decimal_marks("'4,294', '1.2.3', '2026-03-02', '-$120', 'v2.31b'") == frozenset()
    assert decimal_marks("'1,5' beside '1,234.5'") == {DECIMAL_COMMA, DECIMAL_POINT}
    assert data_marks("'2,31'") == frozenset()  # not a data symbol: the gate judges it apart


def test_a_lesson_certain_of_the_other_decimal_mark_stays_out() -> None:
    """The decimal-comma lesson ('2,31') and the money lesson ('€2,165.93') by the data's
    certain decimal mark: a shared currency does not let in a lesson whose numbers read the
    other way; data with no certain mark, or both, judges neither."""
    euro_point = ("values of column 'cost' in expenses.csv: '€1,857.99', '€ 414'",)
    euro_comma = ("values of column 'cost' in expenses.csv: '€1.857,99', '€ 414'",)
    lab_comma = ("values of column 'value' in lab.tsv: '4,30', '141,14'",)
    unsure = ("values of column 'cost' in expenses.csv: '€4,294', '€ 414'",)
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, LAB, PLAIN])
        for stage in ("seed", "reflection"):

            def recall(data: tuple[str, ...]) -> list[str]:
                query = LessonQuery(text="ERR a wrong total", scope="s", stage=stage, data=data)  # noqa: B023
                return sorted(h.lesson.root_cause for h in memory.recall(query))

            assert recall(euro_point) == sorted([MONEY.root_cause, PLAIN.root_cause])
            assert recall(euro_comma) == sorted([LAB.root_cause, PLAIN.root_cause])
            assert recall(lab_comma) == sorted([LAB.root_cause, PLAIN.root_cause])
            assert recall(unsure) == sorted([MONEY.root_cause, LAB.root_cause, PLAIN.root_cause])
            # Data holding both marks is unsure: neither lesson is judged by them.
            both = ("values of column 'cost' in expenses.csv: '€1.857,99', '€12.50'",)
            assert recall(both) == sorted([MONEY.root_cause, LAB.root_cause, PLAIN.root_cause])
        # A reflection's text is a glimpse: what it quotes from the input judges too; a
        # number elsewhere in it (a check's expected output) does not.
        glimpse = "ERR could not convert string to float\nin the input: '€1,857.99', '€ 414'"
        assert _recall(memory, glimpse) == sorted([MONEY.root_cause, PLAIN.root_cause])
        expected = "ERR the total is wrong: expected '1857,99'"
        assert len(_recall(memory, expected)) == 3


def test_a_lesson_s_decimal_mark_is_its_input_evidence_and_a_shared_pitfall_wins() -> None:
    """Numbers in a lesson's prose (a version, an expected output) make it certain of
    nothing; a lesson learned on blank cells in '.' data still reaches ',' data with blanks:
    the blank cell is its pitfall, and it is in this data."""
    prose = _lesson(
        "the total was wrong (in the input: values of column 'n': 'x', 'y')",
        "Python '3.11' rounds '12.50' to '12.5' in the wrong column",  # (its own axis)
    )
    blanks = _lesson(
        "could not convert string to float: '' (in the input: values of column 'kg': '47.5', '')",
        "a blank cell is a missing value, renamed",
    )
    comma_blanks = (
        "values of column 'kg' in weights.csv: '45,5', ''",
        "a missing value in the input: ''",  # as `agent.profile.input_symbols` writes it
    )
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([prose, blanks, MONEY])
        query = LessonQuery(text="ERR a wrong total", scope="s", data=comma_blanks)
        found = sorted(h.lesson.root_cause for h in memory.recall(query))
        assert found == sorted([prose.root_cause, blanks.root_cause])  # MONEY: '.' and '€'


class _Below(FlatEmbedder):
    """A text saying "LOWER" sits at cosine 0.8 to the queries' axis."""

    def _one(self, text: str) -> list[float]:
        return [0.8, 0.0, 0.0, 0.0, 0.6] if "LOWER" in text else super()._one(text)


def test_lessons_about_other_data_do_not_crowd_out_one_that_fits() -> None:
    """More lessons the gate keeps out than recall's candidate pool holds, all closer to the
    query: the one that fits, further down, is still found."""
    crowd = [
        _lesson(f"could not convert '${n},99' (in the input: '${n},99')", f"currency {n}")
        for n in range(30)
    ]
    fits_ = LessonDraft(
        scope="s",
        error_type="ValueError",
        symptom="LOWER a wrong total",
        root_cause="the wrong column was read",
        fix="read the total column",
    )
    with Memory.in_memory(_Below(), min_similarity=0.4, dedup_similarity=1.01) as memory:  # type: ignore[arg-type]
        memory.add_many([*crowd, fits_])
        plain = ("--- tickets.csv ---\nid,total\n1,12.5",)
        # No word of the fitting lesson in the query: BM25 cannot bring it in either.
        query = LessonQuery(text="ERR sums off", scope="s", stage="reflection",
                            error_types=("ValueError",), data=plain)  # fmt: skip
        assert [h.lesson.root_cause for h in memory.recall(query)] == [fits_.root_cause]


class _Far(FlatEmbedder):
    """A task start ("TASK") at cosine 0.2 to every lesson symptom ("ERR"), and at 0.45 to
    a "NEAR" one."""

    def _one(self, text: str) -> list[float]:
        if "TASK" in text:
            return [0.2, 0.0, 0.0, 0.0, 0.98]
        if "NEAR" in text:
            return [0.965, 0.0, 0.0, 0.0, 0.262]
        return super()._one(text)


def test_a_data_symbol_the_task_shares_lets_a_distant_lesson_in_at_its_start() -> None:
    """`seed_data_cut`: at a task start, a lesson quoting a data symbol the task's own data
    holds is a candidate from that cosine (here 0.2, under the cut 0.4) and opens the seed
    gate; a lesson quoting no symbol, or symbols the data lacks, still needs the cut, and
    reflections are not touched."""
    bom_data = ("--- tags.txt ---\n\\ufeffpython\nsql",)
    dollar_data = ("values of column 'fee' in fees.csv: '$12.50', '$1,020.00'",)
    plain_data = ("--- tags.txt ---\npython\nsql",)

    def start(data: tuple[str, ...], stage: RecallStage = "seed") -> list[str]:
        query = LessonQuery(text="TASK count each tag", scope="s", stage=stage, data=data)
        return [h.lesson.root_cause for h in memory.recall(query)]

    semicolon = _lesson("KeyError: 'qty' (in the input: 'id;qty')", "one ';'-delimited file")
    poem_data = ("--- poem.txt ---\nUpon the straits; on the French coast",)
    with Memory.in_memory(_Far(), min_similarity=0.4, seed_data_cut=0.1) as memory:  # type: ignore[arg-type]
        memory.add_many([MONEY, HEADER, PLAIN, semicolon])
        assert start(bom_data) == [HEADER.root_cause]
        assert start(dollar_data) == [MONEY.root_cause]  # any two currencies count as one
        assert start(plain_data) == []
        assert start(bom_data, stage="reflection") == []
        # A ';' is punctuation in prose too: no evidence on its own.
        assert start(poem_data) == []
    with Memory.in_memory(_Far(), min_similarity=0.4, seed_data_cut=0.3) as memory:  # type: ignore[arg-type]
        memory.add_many([MONEY, HEADER, PLAIN])
        assert start(bom_data) == []  # 0.2 is under this data cut too
    with Memory.in_memory(_Far(), min_similarity=0.4) as memory:
        memory.add_many([MONEY, HEADER, PLAIN])
        assert start(bom_data) == [HEADER.root_cause]  # on by default, from any cosine
    with Memory.in_memory(_Far(), min_similarity=0.4, seed_data_cut=None) as memory:  # type: ignore[arg-type]
        memory.add_many([MONEY, HEADER, PLAIN])
        assert start(bom_data) == []  # off


def test_a_lesson_let_in_by_the_data_ranks_after_those_that_passed_on_meaning() -> None:
    """The BOM lesson shares the start's words ('sku', 'qty') and its data: fused with the
    others it would outrank a lesson just over the cut that shares neither. It must not: a
    lesson let in below the cut never displaces one that passed it."""
    near = LessonDraft(scope="s", error_type="KeyError", symptom="NEAR a value went missing",
                       root_cause="a column renamed", fix="read the new name")  # fmt: skip
    bom_data = ("--- stock.csv ---\n\\ufeffsku,qty\nA-1,3",)
    with Memory.in_memory(_Far(), min_similarity=0.4) as memory:
        memory.add_many([HEADER, near])
        query = LessonQuery(text="TASK sum qty per sku", scope="s", stage="seed", data=bom_data)
        hits = memory.recall(query)
        assert [h.lesson.root_cause for h in hits] == [near.root_cause, HEADER.root_cause]


def test_a_lesson_learned_on_a_blank_cell_is_for_data_with_missing_values() -> None:
    # The missing-grades lesson of the 1.5B stream ("could not convert string to float: ''")
    # was recalled at the start of a booleans, a currency and a percent task, whose data
    # holds no blank: 3 of its 6 uses misled.
    assert data_marks("could not convert string to float: ''") == {"∅"}
    assert data_marks("invalid literal for int() with base 10: 'N/A'", data=False) == {"∅"}
    # Code and a listing of values are not a message quoting the value it failed on.
    assert data_marks("use .replace(',', '') first", data=False) == frozenset()
    assert data_marks("values of column 'score': '79', '', '-'", data=False) == frozenset()
    # In a failure's words the value must be an input cell too: a '' the program made
    # itself (`s.split('$')[0]`) with no blank in the evidence is none.
    lone = "could not convert string to float: '' (in the input: '$860.45', '$4')"
    assert data_marks(lone, data=False, words=True) == {"$", "¤"}
    shown = "could not convert string to float: '' (in the input: '79', '', '-')"
    assert data_marks(shown, data=False, words=True) == {"∅"}
    blank = _lesson("could not convert string to float: '' (in the input: '79', '')",
                    "blanks were renamed")  # fmt: skip
    with Memory.in_memory(FlatEmbedder(), min_similarity=0.4) as memory:
        memory.add_many([blank, PLAIN])
        for stage in ("seed", "reflection"):
            full = ("--- a.csv ---\nid,flag\n1,yes", "a missing value in the input: 'N/A'")
            plain = ("--- a.csv ---\nid,flag\n1,yes",)
            got = {
                name: sorted(
                    h.lesson.root_cause
                    for h in memory.recall(
                        LessonQuery(text="ERR count", scope="s", stage=stage, data=data)
                    )
                )
                for name, data in (("full", full), ("plain", plain))
            }
            assert got["full"] == sorted([blank.root_cause, PLAIN.root_cause])
            assert got["plain"] == [PLAIN.root_cause]
    # A blank shared with the data is no evidence on its own (seed_data_cut): only a symbol.
    from memory.datagate import QueryData

    assert not QueryData(frozenset({"∅"}), strict=True).shares(frozenset({"∅"}))
    assert QueryData(frozenset({"$", "∅"}), strict=True).shares(frozenset({"$", "∅"}))


def test_a_bom_named_in_words_is_the_bom() -> None:
    # The bom_01 lesson of the 1.5B stream ("Unexpected UTF-8 BOM", no '\ufeff' quoted) was
    # recalled into the reflections of a currency and a tickets task without a BOM.
    def marks(text: str) -> frozenset[str]:
        return data_marks(text, data=False, words=True)

    assert marks("result.json is not valid JSON: Unexpected UTF-8 BOM") == {"ufeff"}
    assert marks("the file starts with a Byte Order Mark") == {"ufeff"}
    assert marks("a bom-bastic total; BOMB") == frozenset()
    assert marks("stray spaces in the header (not a BOM); no BOM here") == frozenset()
    # A data file's "BOM" (a bill of materials) is not read as one.
    assert data_marks("part,BOM,qty") == frozenset()
