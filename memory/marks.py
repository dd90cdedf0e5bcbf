"""The data symbols a text holds, read by recall's data gate (`memory.datagate`): currency
signs and codes, '%', ';', '|', the BOM, and a missing value. Tokens come from
`memory.lexical.tokenize`, so a symbol is what BM25 keeps as one.
"""

from __future__ import annotations

import re

from memory.lexical import CURRENCY, SYMBOLS, tokenize

_DATA_SYMBOLS = frozenset(SYMBOLS) | {"ufeff"}


# A value quoted in prose ('a;b', not the "file's ... it's" of two apostrophes).
_QUOTED_VALUE = re.compile(r"(?<!\w)'[^'\n]*'(?!\w)")
DELIMITERS = frozenset(";|")
# A missing value as a message quotes the one it failed on (": ''", ": 'N/A'"), not any ''
# (`.replace(',', '')` in a root cause is code): "∅" among the marks. In a lesson's words
# (`data=False, words=True`) the same value must be quoted again, as a cell of the input
# evidence: a '' the program made itself (`s.split('$')[0]`) is no blank cell. A failure
# happening now is judged with its task's data, which shows whether it has blanks. The data
# side writes
# "a missing value in the input: ''" (`agent.profile.input_symbols`).
MISSING = "∅"
_MISSING_VALUE = re.compile(
    r"""(?<=: )(''|""|'(?:n/?a|na|null|none|nan|-|\?|—|–)')(?![\w'])""", re.IGNORECASE
)
# A byte order mark named in words ("Unexpected UTF-8 BOM", "a byte order mark"), read in a
# failure's or a lesson's words only (a data file's "BOM" column is a bill of materials);
# "no BOM" or "not a BOM" names none.
_BOM_WORDS = re.compile(
    r"(?<!\bno )(?<!\bnot a )(?<!\bnot )(?:\bBOMs?\b|(?i:\bbyte[- ]order[- ]marks?\b))"
)


# A currency written as its code beside a number ('USD 1,625', '3,725 EUR'): "¤" as a sign.
_CODES = "USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|CNY|INR|SEK|NOK|DKK|PLN|CZK|HUF|BRL|MXN|ZAR|KRW|SGD|HKD"
_CURRENCY_CODE = re.compile(rf"\b(?:{_CODES})\s?[-+]?\d|\d\s?(?:{_CODES})\b")


# The decimal mark a quoted number makes certain (`decimal_marks`), as a mark of its own: "."
# for '4,332.59' or '860.45', "," for '2,31' or '1.010,9'. The same patterns tell the input
# evidence how a column's numbers read (`agent.readings`).
COMMA_DECIMAL = re.compile(r"[-+]?\d{1,3}(\.\d{3})+,\d+|[-+]?\d+,(\d{1,2}|\d{4,})")
POINT_DECIMAL = re.compile(r"[-+]?\d{1,3}(,\d{3})+\.\d+|[-+]?\d+\.(\d{1,2}|\d{4,})")
DECIMAL_POINT, DECIMAL_COMMA = "dec.", "dec,"
# What follows it in a failure's text or a lesson's symptom quotes the input (the evidence:
# `agent.feedback`, `retrospectives.facts.symptom_of`).
INPUT_LABEL = "in the input: "
# A quoted number with at most a currency sign or code around it: its digits.
_SIGN = rf"(?:[$€£¥]|{_CODES})"
_QUOTED_NUMBER = re.compile(
    rf"(?<!\w)'[ \t]*[-+]?(?:{_SIGN}[ \t]?)?[-+]?(\d[\d.,]*)(?:[ \t]?{_SIGN})?[ \t]*'(?!\w)"
)


def decimal_marks(text: str) -> frozenset[str]:
    """The decimal marks the numbers quoted in `text` make certain ('2,31' a comma, '860.45' a
    point; '4,294' or '1.5.2' neither): `DECIMAL_COMMA`, `DECIMAL_POINT`, both or none.

    A number-conversion fix holds for one convention only: the decimal-comma task's
    `.replace(',', '.')`, recalled by a euro task, turned '1,857.99' into '1.857.99' (1.5B
    stream, twenty-fifth session), and a thousands strip does the same to '1.010,9'. So
    recall's data gate keeps a lesson out of data whose certain mark is the other one
    (`memory.datagate`); a side with no certain mark, or both, is not judged."""
    found = set()
    for digits in _QUOTED_NUMBER.findall(text):
        if COMMA_DECIMAL.fullmatch(digits):
            found.add(DECIMAL_COMMA)
        elif POINT_DECIMAL.fullmatch(digits):
            found.add(DECIMAL_POINT)
    return frozenset(found)


def data_marks(text: str, *, data: bool = True, words: bool = False) -> frozenset[str]:
    """The data symbols `text` holds (`_TOKEN`'s currency signs, '%', ';', '|' and the BOM),
    plus "¤" for any currency, sign or code ('USD 1,625'): a lesson learned on '€ 414'
    applies to '$860.45'; plus "∅" for a missing value quoted as a message quotes the value
    it failed on (": ''", ": 'N/A'"): a lesson learned on a blank cell is for data with
    blanks or NA markers; a BOM named in words counts as the BOM. Value
    shapes are not marks: a lesson learned on one date or decimal format applies to another
    (measured: with shapes, recall lost a tenth of its right first hits). Read by recall's
    data gate (`memory.datagate`).

    `data=False` for prose (a lesson's symptom and root cause): ';' and '|' count only inside
    a quoted value there, since prose uses them as punctuation ("(+02:00, Z); mixing ...").
    `words=True` for a failure's or a lesson's words (not a data file): a BOM may be named
    there, and a missing value must also be quoted as an input cell."""
    marks = {t for t in tokenize(text) if t in _DATA_SYMBOLS}
    if _CURRENCY_CODE.search(text):
        marks.add("¤")
    missing = _MISSING_VALUE.search(text)
    if missing and (data or not words or text.count(missing.group(1)) >= 2):
        marks.add(MISSING)
    if words and _BOM_WORDS.search(text):
        marks.add("ufeff")
    if not data:
        quoted = "".join(_QUOTED_VALUE.findall(text))
        marks -= {d for d in DELIMITERS if d not in quoted}
    if marks & CURRENCY:
        marks.add("¤")
    return frozenset(marks)
