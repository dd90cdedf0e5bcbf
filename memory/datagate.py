"""Recall's data gate, at the stages `RecallConfig.data_gate` names (both by default).

A lesson whose symptom or root cause holds a data symbol (a currency sign, '%', ';', '|', a
BOM: the symbols `memory.lexical` keeps as tokens) is recalled for a query that holds data
symbols only when they share one (any two currencies count as one); a side holding none is
not judged by it. The error type alone let another family's lesson through: on the 1.5B
stream a '$' ValueError got the BOM task's lesson (cosine 0.56) and failed where the replay
without it passed (README).
Value shapes are not compared: a gate on them dropped right lessons learned on another date
or decimal format (scripts/bench_recall.py: reflection hit@1 0.60 -> 0.50).
At the seed stage (a task start) the gate was off until a learning stream showed the case:
the currency task's start ('$' in its amounts) got the BOM task's lesson ('\\ufeffsku' in its
symptom, cosine 0.43) and passed in round 2 as without memory, at 3,124 tokens instead of
2,012; gated, that start gets nothing. A start is judged on its data (`query_marks`), and a
lesson's ';' or '|' counts only inside a quoted value: a goal's '%Y-%m-%d' or a root cause's
"...); mixing" is prose. On the trap tasks' starts (scripts/bench_recall.py) hit@1 stays
0.65 with the same no-lesson rates.
"""

from __future__ import annotations

from memory.dedup import index_text
from memory.lexical import data_marks
from memory.matchtext import match_text
from memory.types import Lesson, LessonQuery


def query_marks(query: LessonQuery) -> frozenset[str]:
    """The data symbols a gated query holds. A task start is judged on its data alone (its
    surface views: file heads and profile), not on its goal's words ('%Y-%m-%d', 'amounts
    in $', a ';'), as `memory.seedgate` reads stated errors; a seed query without views (a
    text sent through MCP) is not judged, as before task starts were gated."""
    if query.stage == "seed":
        views = [v for v in query.surface if v.strip()]
        return data_marks(match_text("\n".join(views))) if views else frozenset()
    return data_marks(match_text(query.text))


def lesson_marks(lesson: Lesson) -> frozenset[str]:
    """The data symbols a lesson's symptom and root cause quote (prose ';' and '|' are not)."""
    return data_marks(index_text(lesson.symptom, lesson.root_cause), data=False)


def fits(query: frozenset[str], lesson: frozenset[str]) -> bool:
    """A lesson whose text holds a data symbol fits a query that holds one only when they
    share one (any two currencies count as shared); either side holding none fits."""
    return not query or not lesson or bool(query & lesson)
