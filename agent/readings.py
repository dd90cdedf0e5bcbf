"""How a column's values are meant, where the values leave no doubt: the readings the input
evidence appends to a column's line (`agent.tables.column_line`).

- Yes/no answers written more than two ways, sorted into yes and no: "yes/no written 7
  ways: 'true', 'Yes', 'y', '1' mean yes; 'false', 'No', '0' mean no". A small model's
  repairs compared one more spelling per round while every spelling was listed.
- Numbers `float()` cannot read, with how they read: "as numbers: '1.010,9' is 1010.9,
  '742,2' is 742.2 (',' marks decimals, '.' groups thousands)". Only when one decimal mark
  is certain for the whole column and every value is a number in it, with at most a
  currency sign or code around it: '4,294' alone, '1,5' beside '1,234.5', a date
  '01.02.2024' or a version '1.2.3' say nothing.

Recall compares without these words (`memory.matchtext.drop_readings` keeps in step with
the two forms above): they repeat on every column of their kind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.marks import COMMA_DECIMAL, POINT_DECIMAL

MAX_READINGS = 3
# Currency codes the evidence treats as data symbols (agent.profile._SYMBOL_VALUE too).
CODES = "(?:USD|EUR|GBP|JPY|CHF|CAD|AUD)"
# A number with at most a currency around it, on a stripped cell: '$4,332.59', 'GBP 4,294',
# '3,725 USD', '€ 1.857,99', '-$120', '-18,9'. One run of spaces on each side, and none that
# can overlap another: a long cell of spaces is matched in linear time.
_MONEY = re.compile(rf"([-+]?)(?:(?:[$€£¥]|{CODES})\s*)?([-+]?\d[\d.,]*)(?:\s*(?:[$€£¥]|{CODES}))?")
# Evidence of a decimal mark: a number only that mark can make sense of (`memory.marks`).
# Every value of a column read with that mark: thousands in groups of three, one mark.
_COMMA_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?")
_POINT_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_YES = frozenset({"true", "t", "yes", "y", "1", "on"})
_NO = frozenset({"false", "f", "no", "n", "0", "off"})


def yes_no(distinct: Sequence[str]) -> str | None:
    """Which answers mean yes and which no, for a column of yes/no answers written more than
    two ways. A column of 0 and 1 alone is a count as often as an answer: None."""
    words = {v: v.strip().lower() for v in distinct if v.strip()}
    meant = set(words.values())
    if len(words) <= 2 or not meant <= _YES | _NO or meant <= {"0", "1"}:
        return None
    yes = [v for v, w in words.items() if w in _YES]
    no = [v for v, w in words.items() if w in _NO]
    if not yes or not no:
        return None
    return (
        f"yes/no written {len(words)} ways: {', '.join(map(repr, yes))} mean yes; "
        f"{', '.join(map(repr, no))} mean no"
    )


def as_numbers(distinct: Sequence[str], formats: Sequence[str]) -> str | None:
    """How the numbers `float()` cannot read are meant, judged on every distinct value
    (blank cells say nothing), shown for the first few of `formats` (one value of each
    format); None when float() reads them all or the decimal mark is in doubt (the module
    docstring)."""
    cores: dict[str, str] = {}
    for value in distinct:
        if not value.strip():
            continue
        found = _MONEY.fullmatch(value.strip())
        if found is None:
            return None
        cores[value] = found.group(1) + found.group(2)
    comma = any(COMMA_DECIMAL.fullmatch(c) for c in cores.values())
    point = any(POINT_DECIMAL.fullmatch(c) for c in cores.values())
    if comma == point and not all(c.lstrip("+-").isdigit() for c in cores.values()):
        return None  # no mark, or both: in doubt
    number = _COMMA_NUMBER if comma else _POINT_NUMBER
    if not all(number.fullmatch(c) for c in cores.values()):
        return None  # '01.02.2024', '1.2.3': not numbers of this mark
    read = {v: c.replace(".", "").replace(",", ".") if comma else c.replace(",", "")
            for v, c in cores.items()}  # fmt: skip
    unread = [v for v in formats if v in read and not _floats(v)]
    if not unread:
        return None
    shown = ", ".join(f"{v!r} is {read[v]}" for v in unread[:MAX_READINGS])
    marks = "',' marks decimals" if comma else "'.' marks decimals" if point else ""
    if any(("." if comma else ",") in c for c in cores.values()):
        marks += f"{', ' if marks else ''}{'.' if comma else ','!r} groups thousands"
    return f"as numbers: {shown}" + (f" ({marks})" if marks else "")


def _floats(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
