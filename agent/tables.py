"""A delimited input file as the evidence reads it: rows, columns, the header as the csv
module reads it by default, and how a column or a group of rows is shown to the refiner.

`agent.evidence` decides what to show for a failure; this module only reads and renders.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from agent.readings import as_numbers, yes_no

DELIMITERS = (",", ";", "\t", "|")
# A column's distinct values shown: a column of at most MAX_CASES distinct values whole (the
# set of cases a program must handle: eleven spellings of yes and no), as far as they fit in
# MAX_LISTED characters; a longer one MAX_VALUES of them, varied formats first.
MAX_CASES = 16
MAX_VALUES = 8
MAX_LISTED = 200


def group_line(name: Path, rows: list[list[str]], column: int, literal: str) -> str | None:
    """The rows of a group an output key names ('T-04' of column 'sensor'): how many, and
    the values of up to three other columns in row order, columns without letters (amounts,
    counts, dates) first. A wrong average or total shows the values it came from, repeated
    rows and all. None for a single row (an id, not a group)."""
    header, body = rows[0], rows[1:]
    group = [row for row in body if column < len(row) and row[column].strip() == literal.strip()]
    if len(group) < 2:
        return None
    worded = [any(ch.isalpha() for v in values for ch in v) for values in columns(rows)]
    others = sorted((k for k in range(len(header)) if k != column), key=worded.__getitem__)[:3]
    parts = []
    for k in others:
        values = [row[k] if k < len(row) else "" for row in group]
        shown = within([v if len(v) <= 60 else v[:57] + "..." for v in values], MAX_LISTED)
        more = f" ... ({len(values)} in all)" if len(shown) < len(values) else ""
        parts.append(f"{header[k]!r}: {', '.join(map(repr, shown))}{more}")
    return (
        f"the {len(group)} of {len(body)} rows of {name} whose {header[column]!r} is "
        f"{literal!r} hold {'; '.join(parts)}"
    )


def default_header(text: str) -> list[str]:
    """The first row as `csv.reader` reads it with its defaults (a comma), [] if it cannot."""
    try:
        return next(csv.reader(io.StringIO(text)), [])
    except csv.Error:
        return []


def within(values: list[str], limit: int) -> list[str]:
    """The first values whose listing fits in `limit` characters (at least one)."""
    shown: list[str] = []
    for value in values:
        if shown and len(", ".join(repr(v) for v in [*shown, value])) > limit:
            break
        shown.append(value)
    return shown


def is_json(text: str) -> bool:
    return text.lstrip("\ufeff \n\t")[:1] in ("{", "[")


def columns(rows: list[list[str]]) -> list[list[str]]:
    """Each header cell's values in the body (short rows give none)."""
    body = rows[1:]
    return [[row[c] for row in body if c < len(row)] for c in range(len(rows[0]))]


def csv_rows(text: str) -> list[list[str]]:
    """The rows of a delimited file, or [] when it does not look like one: its first line's
    most frequent delimiter must split at least 4 in 5 rows (a row may lack trailing cells;
    a web server log whose first line holds a ';' inside a user agent is no table)."""
    first = text.split("\n", 1)[0]
    delimiter = max(DELIMITERS, key=first.count)
    if first.count(delimiter) == 0:
        return []
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
    except csv.Error:
        return []
    return rows if 5 * sum(len(row) > 1 for row in rows) >= 4 * len(rows) else []


def loosely(name: str) -> str:
    return name.strip().lstrip("\ufeff").strip().lower()


_DIGITS, _LETTERS = re.compile(r"\d+"), re.compile(r"[^\W\d_]+")


def shape(value: str) -> str:
    """Digits become 9 and letters a, runs collapsed: '$4,332.59' -> '$9,9.9'.

    Spaces and the currency sign stay: ' $99.65 ' and '€99.65' are other formats to show the
    refiner. `memory.lexical.shape` is the coarser form recall matches across tasks."""
    return _LETTERS.sub("a", _DIGITS.sub("9", value))


def column_line(name: Path, column: str, values: list[str]) -> str:
    distinct = list(dict.fromkeys(values))
    by_shape: dict[str, str] = {}
    for value in distinct:
        by_shape.setdefault(shape(value), value)
    ordered = list(by_shape.values())
    ordered += [v for v in distinct if v not in ordered]
    shown: list[str] = []
    for value in ordered[: MAX_CASES if len(ordered) <= MAX_CASES else MAX_VALUES]:
        if shown and len(", ".join(repr(v) for v in [*shown, value])) > MAX_LISTED:
            break
        shown.append(value)
    listed = ", ".join(repr(v) for v in shown)
    # Yes/no answers are sorted only when all of them are listed.
    whole = len(shown) == len(distinct)
    meaning = (yes_no(distinct) if whole else None) or as_numbers(distinct, list(by_shape.values()))
    return (
        f"values of column {column!r} in {name} ({len(shown)} of {len(distinct)} distinct, "
        f"varied formats first): {listed}" + (f"; {meaning}" if meaning else "")
    )


def json_records(text: str) -> list[object]:
    """JSON lines, or the objects of a JSON document's top-level list (or list values)."""
    try:
        doc = json.loads(text)
    except ValueError:
        found = []
        for line in text.splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
        return found
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        return [item for v in doc.values() if isinstance(v, list) for item in v]
    return [doc]
