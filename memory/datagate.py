"""Recall's data gate, at the stages `RecallConfig.data_gate` names (both by default).

A lesson whose symptom or root cause holds a data symbol (a currency sign, '%', ';', '|', a
BOM: the symbols `memory.lexical` keeps as tokens) is recalled for a query that holds data
symbols only when they share one (any two currencies count as one); a side holding none is
not judged by it. The error type alone let another family's lesson through: on the 1.5B
stream a '$' ValueError got the BOM task's lesson (cosine 0.56) and failed where the replay
without it passed (README).
Value shapes are not compared (but for the decimal mark, below): a gate on them dropped
right lessons learned on another date or decimal format (scripts/bench_recall.py:
reflection hit@1 0.60 -> 0.50).
At the seed stage (a task start) the gate was off until a learning stream showed the case:
the currency task's start ('$' in its amounts) got the BOM task's lesson ('\\ufeffsku' in its
symptom, cosine 0.43) and passed in round 2 as without memory, at 3,124 tokens instead of
2,012; gated, that start gets nothing. A start is judged on its data (`query_marks`), and a
lesson's ';' or '|' counts only inside a quoted value: a goal's '%Y-%m-%d' or a root cause's
"...); mixing" is prose. On the trap tasks' starts (scripts/bench_recall.py) hit@1 stays
0.65 with the same no-lesson rates.
The task's data, when the query carries it (`LessonQuery.data`; the loop sends each input
file's head, the data's profile and a value per data symbol found anywhere in the input,
`agent.queries.data_views`, at both stages), is what the gate judges, and strictly: a
lesson quoting a data symbol reaches a task only if the task's data holds one of them, even
when the data holds none at all. A failure's text quotes the data only in part (a wrong total
quotes no '$'), and "a side holding none fits" let the BOM task's lesson (its symptom quotes
'\\ufeffsku') into the reflections of four tasks whose data has no BOM, among them the euro
task, and the '$' task's lesson into the decimal-comma task's, in the 1.5B stream of the
thirteenth session: 5 of its 10 recalls, none of which helped (docs/status-log.md).

Decimal marks (`memory.marks.decimal_marks`) are judged apart, by contradiction only: a
lesson whose input evidence (its symptom's "in the input:" part, not its prose: a version
'3.11' or an expected '12.50' is no input value) is certain of one mark ('2,31') stays out of
data certain of the other ('1,857.99'), unless they share a symbol other than a currency (a
blank cell, a BOM: the lesson's pitfall is in this data); either side unsure fits. A
number-conversion fix holds for one convention: in the 1.5B stream of the twenty-fifth
session the euro task recalled the decimal-comma task's `.replace(',', '.')` lesson (no
symbol to gate on), wrote '1.857.99' and failed in 3 rounds where the run without memory
passed. A failure's text is read the same way, its data views whole (they are data).

Shared symbols as evidence (`QueryData.shares`, recall's `seed_data_cut`): at a task start,
a lesson quoting a data symbol the task's own data holds is let in below the cosine cut, and
ranks after every lesson that passed on meaning. A shared symbol says the lesson's pitfall is
in this data where the goal's words say little: a CSV lesson learned on stock quantities and
a tags.txt task with the same BOM are at cosine 0.25. On the trap tasks' starts
(scripts/bench_recall.py --trap-tasks only) hit@1/hit@3 0.69/0.69 -> 0.71/0.72 (halves
0.57/0.57 -> 0.61/0.62, 0.84/0.84 unchanged), related starts left empty 4 -> 2, unrelated
starts without a lesson 0.97 -> 0.97, the same from cosine 0.0 or 0.2. Ranked with the
others (fused from the lower floor) it scored 0.73/0.73, but a lesson let in below the cut
must not outrank one that passed it (the seed cut margin did, on a real stream's store). With
delimiters counted too, a poem with a ';' got the semicolon lesson (no lesson 0.96).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.dedup import index_text
from memory.lexical import CURRENCY
from memory.marks import (
    DECIMAL_COMMA,
    DECIMAL_POINT,
    DELIMITERS,
    INPUT_LABEL,
    MISSING,
    data_marks,
    decimal_marks,
)
from memory.matchtext import match_text
from memory.types import Lesson, LessonQuery


@dataclass(frozen=True)
class QueryData:
    """What the gate knows of a query's data: the symbols it holds, and whether that is the
    task's data (`strict`: a lesson quoting symbols it lacks stays out) or a glimpse of it
    (a failure's text, a task start's views: a side holding none is not judged)."""

    marks: frozenset[str] = frozenset()  # with its certain decimal marks
    strict: bool = False

    @property
    def judges(self) -> bool:
        """Can a lesson's marks decide anything? (Else they need not be read.)"""
        return self.strict or bool(self.marks)

    def shares(self, lesson: frozenset[str]) -> bool:
        """The gate's other side, for `RecallConfig.seed_data_cut`: does this task's data hold
        one of the lesson's symbols, other than a delimiter? A ';' or '|' is punctuation in a
        text file too ("the straits; on the coast"): it keeps a lesson away from data without
        it, but is no evidence on its own that the lesson belongs; nor is a blank cell, which
        many files have."""
        return self.strict and bool(self.marks & (lesson - DELIMITERS - {MISSING} - _DECIMALS))

    def admits(self, lesson: frozenset[str]) -> bool:
        """A lesson certain of the other decimal mark than the data fits only if they share
        a symbol other than a currency. Else one quoting no data symbol fits; one that does
        fits data sharing one of its symbols (any two currencies count as shared), or a
        glimpse holding none."""
        mark, other = _one_mark(lesson), _one_mark(self.marks)
        lesson, marks = lesson - _DECIMALS, self.marks - _DECIMALS
        if mark and other and mark != other and not (lesson & marks) - CURRENCY - {"¤"}:
            return False
        if not lesson:
            return True
        if not marks:
            return not self.strict
        return bool(marks & lesson)


_DECIMALS = frozenset({DECIMAL_COMMA, DECIMAL_POINT})


def _one_mark(marks: frozenset[str]) -> frozenset[str]:
    """The decimal mark `marks` are certain of: one, or none when they hold none or both."""
    found = marks & _DECIMALS
    return found if len(found) == 1 else frozenset()


def _marks_of(text: str, *, evidence: str | None = None, **how: bool) -> frozenset[str]:
    """`memory.marks.data_marks` of `text` with the decimal marks of `evidence` (what it
    quotes from the input; None: `text` is all data), in what follows each "in the input:"."""
    if evidence is not None:
        evidence = "\n".join(
            line.partition(INPUT_LABEL)[2] for line in evidence.splitlines() if INPUT_LABEL in line
        )
    return data_marks(text, **how) | decimal_marks(text if evidence is None else evidence)


def query_data(query: LessonQuery) -> QueryData:
    """The data a gated query holds. Its `data` (the task's input), when given, strictly,
    with what a reflection's text quotes besides (the views are a file's head and a profile of
    its columns: a '$' on line 500 of a log shows only in the failure that met it).
    Else a task start is judged on its surface views (file heads and profile), not on its
    goal's words ('%Y-%m-%d', 'amounts in $', a ';'), as `memory.seedgate` reads stated
    errors; a seed query without views (a text sent through MCP) is not judged; a reflection
    on the symbols its text quotes."""
    if any(v.strip() for v in query.data):
        # A reflection's text may quote what the views missed (a value deep in a file).
        text = (
            _marks_of(match_text(query.text), evidence=query.text, words=True)
            if query.stage == "reflection"
            else frozenset()
        )
        return QueryData(views_marks(query.data) | text, strict=True)
    if query.stage == "seed":
        return QueryData(views_marks(query.surface))
    return QueryData(_marks_of(match_text(query.text), evidence=query.text, words=True))


def views_marks(views: tuple[str, ...]) -> frozenset[str]:
    """The data symbols a task's data views hold (`agent.queries.data_views`), with the
    decimal marks their quoted numbers are certain of."""
    text = "\n".join(v for v in views if v.strip())
    return _marks_of(match_text(text)) if text else frozenset()


def lesson_marks(lesson: Lesson) -> frozenset[str]:
    """The data symbols a lesson's symptom and root cause quote (prose ';' and '|' are not),
    and the decimal marks its input evidence is certain of."""
    text = index_text(lesson.symptom, lesson.root_cause)
    return _marks_of(text, evidence=lesson.symptom, data=False, words=True)
