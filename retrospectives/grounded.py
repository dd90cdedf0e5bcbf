"""Is what a lesson says about the data true of the run's data?

A small model's retrospective repeats what it was shown. Measured in the 1.5B junk stream
(twenty-fourth session): a booleans task recalled the BOM task's lesson, its refiner copied
that lesson's advice ("remove the BOM from the input file ... binary mode") into its note,
and the lesson the run stored said the root cause of a 'yes'/'y' spelling mix was a BOM;
its data has none. The data symbols a text names (`memory.marks`: currency, '%', ';', '|',
a BOM, a missing value) can be checked against the run: its input (`RunResult.input_marks`),
the failure it met, and the change that fixed it. A claim about data none of them holds is
not kept (`retrospectives.extract`).
"""

from __future__ import annotations

import re

from agent.result import RunResult
from memory.lexical import CURRENCY
from memory.marks import data_marks
from retrospectives.facts import FailureStep

# A strftime directive ('%Y-%m-%d') names no percent.
_STRFTIME = re.compile(r"%[-#_^0]?[A-Za-z]")
# Code that reads or writes a BOM names one ("encoding='utf-8-sig'", `codecs.BOM_UTF8`).
_BOM_CODE = re.compile(r"utf[-_]?8[-_]sig|BOM_UTF8", re.IGNORECASE)


def _marks(text: str, *, data: bool = True, words: bool = False) -> frozenset[str]:
    # Any currency stands for any other: "strip the sign ('$', '€')" is true of '$' data.
    found = data_marks(_STRFTIME.sub(" ", text), data=data, words=words)
    bom = {"ufeff"} if _BOM_CODE.search(text) else set()
    return frozenset({"¤" if m in CURRENCY else m for m in found} | bom)


def ungrounded(text: str, result: RunResult, step: FailureStep) -> frozenset[str]:
    """The data symbols `text` names (in its words: a BOM named, a ';' quoted) that neither
    the run's input, nor its goal (an output format: "as '12.5%'"), nor the failure `step`
    met, nor the change that fixed it holds (code that writes a BOM names one). Empty when
    the run's input is not known (`input_marks` None: no input files, an older run)."""
    if result.input_marks is None:
        return frozenset()
    named = _marks(text, data=False, words=True)
    if not named:
        return named
    known = {"¤" if m in CURRENCY else m for m in result.input_marks}
    known |= _marks(result.goal, data=False, words=True)
    known |= _marks(step.feedback.compressed(), words=True)
    known |= _marks(step.diff, words=True) | _marks(step.change, words=True)
    return named - known
