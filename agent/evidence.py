"""Where a crash's value sits in the input files: the look at the data an engineer takes next.

A program that crashed on one input value ("could not convert string to float: '$860.45'")
is usually repaired for that value only, and crashes on the next ("'$4,332.59'"). The
refiner needs the range of formats, not one instance. So when an error message quotes a
value that occurs in an input file, the feedback also shows, from that file:

- a CSV cell: the column's other distinct values, varied formats first;
- a header name the program looked up (KeyError 'department'): the header as the csv
  module reads it by default (a BOM, stray spaces or another delimiter become visible);
- a column name the program met as a value (`int('qty')`: the header row parsed as data):
  that it is a column name, and the header row;
- a wrong output value whose key names a column (`result.json['pro']['active']: got 1`, or
  `['recommend_pct']` beside a column `would_recommend`): that column's distinct values;
- a wrong output value whose key is a cell of a column (`result.json['T-04']['avg']`):
  also the rows of that group, how many and their other columns' values;
- a string the check says the program wrote that no cell holds ('Rsti'): the closest cell
  ('Rösti'), with its column and file;
- anything else: the first lines that contain it;
- a decoding error at byte position N: the raw bytes around N, and that line as the
  encoding that decodes the whole file reads it (cp1252: 'Inés Peña,Köln');
- a check's verdict on wrong values: also the rows that repeat an earlier row exactly;
- a check's verdict on the keys inside a group's object (`result.json['sodium']:
  unexpected key 'sum'`, "missing key 'avg'"): what the input says of those keys only. The
  group's rows, the data's profile and repeated rows say nothing about a field the program
  added or left out; shown, they sent the 1.5B back to the group's decimal commas
  (`scripts/refine_probe.py`: 3 of 4 answers' fixes; without them it changes other things
  and still leaves the key, 0 of 4 either way). A missing or unexpected key at the top
  (`result.json: missing key 'C-01'`) is often a group the program misread (an encoding,
  a repeated row) and keeps all of it.

Only the task's workspace (the program's own inputs) is read, never the task directory,
which holds what the checker compares against.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import json
import re
from functools import partial
from pathlib import Path
from typing import Literal

from agent.profile import MISSING_CELLS, REPEATS, input_files, input_profile
from agent.tables import (
    column_line,
    columns,
    csv_rows,
    default_header,
    group_line,
    is_json,
    json_records,
    loosely,
)

# A Python repr of a string inside an error message: '...' or "..." with escapes.
_QUOTED = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""")
_DECODE = re.compile(r"can't decode byte (0x[0-9a-f]{2}) in position (\d+)")
MAX_LITERALS = 2
MAX_LINE = 120  # characters of an input line quoted
MAX_CELLS = 20_000
MAX_PROFILE_LINES = 2
# What a message's quoted literal is: a value the program converted (a ValueError), a key of
# the output a check found wrong, or anything else (a key looked up, a name in a crash).
Quoted = Literal["converted", "output key", "other"]


def input_evidence(
    message: str | None, workspace: Path | None, *, check_failed: bool = False
) -> str | None:
    """Lines of evidence from the input files for the values `message` quotes, or None.
    `check_failed`: the message is a check's verdict on the output, so it quotes output keys."""
    if not message or workspace is None or not workspace.is_dir():
        return None
    files = list(input_files(workspace))
    decode = _DECODE.search(message)
    if decode:
        return _decode_evidence(files, int(decode.group(1), 16), int(decode.group(2)))
    tables = [
        (path.relative_to(workspace), text, [] if is_json(text) else csv_rows(text))
        for path, text in ((p, raw.decode("utf-8", errors="replace")) for p, raw in files)
    ]
    named = _keys_inside(message) if check_failed else []
    got = _GOT.search(message) if check_failed else None
    stray = _stray_value(_literal(got.group(1)), files, workspace) if got else None
    quoted: Quoted = (
        "output key" if check_failed else "converted" if "ValueError" in message else "other"
    )
    found: list[str] = []
    # Output keys quoted as a path (`result.json['T-04']`), not values the check got.
    keys = frozenset(
        v for v in _literals(message) if check_failed and not named and _as_key(v, message)
    )
    in_table = partial(_in_table, keys=keys)
    for literal in (named or _literals(message))[:MAX_LITERALS]:
        # The strongest evidence in any file first: a table's cell or column, then a column
        # sharing the words of an output key, then the lines holding the literal.
        evidence = (
            line
            for finder in (in_table, _sharing_words, _lines_holding)
            for name, text, rows in tables
            if (line := finder(name, text, rows, literal, quoted))
        )
        line = next(evidence, None)
        for part in line.split("\n") if line else ():
            if part not in found:  # two literals of one column: the column once
                found.append(part)
    return "\n".join([*([stray] if stray else []), *found]) or None


# A string value a check says the program wrote: `got "Rsti"`, `got 'north '`.
_GOT = re.compile(r"""\bgot ('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")
# A verdict on an output's keys: `missing key 'avg'`, `unexpected keys: "a", "b"`.
_SHAPE = re.compile(r"\b(?:missing|unexpected|extra|unknown|additional)\s+keys?\b:?")
_KEY_LIST = re.compile(r"""\s*(?:,|\band\b)?\s*('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")


def named_keys(message: str | None) -> list[str]:
    """The keys a verdict on an output's shape names as missing or unexpected, in order;
    [] for any other message."""
    found: list[str] = []
    for verdict in _SHAPE.finditer(message or ""):
        at = verdict.end()
        while listed := _KEY_LIST.match(message or "", at):
            if (key := _literal(listed.group(1))) and key.strip() and key not in found:
                found.append(key)
            at = listed.end()
    return found


def _keys_inside(message: str) -> list[str]:
    """The keys a shape verdict names inside a group's object (its message quotes a path:
    `result.json['sodium']: unexpected key 'sum'`); [] at the top or for another verdict."""
    named = named_keys(message)
    inside = any(_as_key(v, message) for v in _literals(message) if v not in named)
    return named if inside else []


def _stray_value(value: str | None, files: list[tuple[Path, bytes]], ws: Path) -> str | None:
    """For a string the program wrote that no input cell holds: the closest cell there is,
    with its column and file (a file that is not UTF-8 read as cp1252, and said so). A name
    that lost its accents ('Rsti' for 'Rösti') or its spaces shows what the reading did.
    Only a value with letters (a computed number or date copies no cell), near enough
    (difflib ratio >= 0.75), among the first MAX_CELLS distinct cells; a value any cell
    holds, spaces and case aside, is not stray."""
    if not value or not any(ch.isalpha() for ch in value):
        return None  # a number or date the program computed is no copy of a cell
    cells: dict[str, str] = {}
    every: set[str] = set()
    for path, raw in files:
        try:
            text, note = raw.decode("utf-8"), ""
        except UnicodeDecodeError:
            text, note = raw.decode("cp1252", errors="replace"), " (not UTF-8: read as cp1252)"
        rows = [] if is_json(text) else csv_rows(text)
        for row in rows[1:]:
            for k, cell in enumerate(row):
                every.add(cell.strip().casefold())
                column = rows[0][k] if k < len(rows[0]) else "?"
                if len(cells) < MAX_CELLS:
                    cells.setdefault(cell, f"column {column!r} of {path.relative_to(ws)}{note}")
    if not cells or value.strip().casefold() in every:
        return None  # a cell holds it (spaces and case aside): nothing stray
    close = difflib.get_close_matches(value, list(cells), n=1, cutoff=0.75)
    if not close:
        return None
    return (
        f"the program wrote {value!r}, which no input cell holds; the closest is "
        f"{close[0]!r}, in {cells[close[0]]}"
    )


def _as_key(value: str, message: str) -> bool:
    return f"[{value!r}]" in message or f"[{json.dumps(value)}]" in message


def crashed_on_data(error_type: str | None, message: str | None, workspace: Path | None) -> bool:
    """Is a crash the input's doing, so any program that reads the input naively meets it?

    Stricter than `input_evidence` (which shows the refiner every line quoting a literal): a
    ValueError on a whole value of a data row ('$860.45', '72.5%', '', a date in another
    format), a KeyError on a header name that Python's default reading spoils (a BOM, spaces,
    another delimiter) or on a JSON key some records lack, a UnicodeDecodeError on the input,
    a JSONDecodeError on a BOM the input starts with.
    A KeyError on a body value ('Initech' counted into a dict never set up), a ValueError on a
    header cell (the header row parsed as data) or a TypeError are the program's: another
    draw may not make them."""
    if not message or workspace is None or not workspace.is_dir():
        return False
    if error_type == "UnicodeDecodeError":
        return input_evidence(message, workspace) is not None
    if (error_type or "").endswith("JSONDecodeError") and "BOM" in message:
        return any(raw.startswith(b"\xef\xbb\xbf") for _, raw in input_files(workspace))
    if error_type not in ("ValueError", "KeyError"):
        return False
    values = _quoted_strings(message)[:MAX_LITERALS]
    return bool(values) and any(
        _data_fault(error_type, values, raw.decode("utf-8", errors="replace"))
        for _, raw in input_files(workspace)
    )


def _quoted_strings(message: str) -> list[str]:
    """Every string literal `message` quotes, in order, blanks included."""
    found = (_literal(m.group(0)) for m in _QUOTED.finditer(message))
    return [v for v in found if v is not None]


def _literal(quoted: str) -> str | None:
    try:
        value = ast.literal_eval(quoted)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def _data_fault(error_type: str, values: list[str], text: str) -> bool:
    """Does one file of the input hold the fault (see `crashed_on_data`) for one of `values`?
    The file is parsed once, whatever the number of values."""
    rows = csv_rows(text)
    if error_type == "ValueError":
        # A file of one column is its lines; the first row is a header's (or one value lost).
        body = rows[1:] if rows else [[line] for line in text.splitlines()[1:]]
        cells = {cell.strip() for row in body for cell in row}
        return any(value.strip() in cells for value in values)
    if rows:
        as_read = default_header(text)
        header = {loosely(cell) for cell in rows[0]}
        if any(v not in as_read and loosely(v) in header for v in values):
            return True
    if not is_json(text):
        return False  # no record can lack a key
    records = [r for r in json_records(text) if isinstance(r, dict)]
    return any(
        any(value in r for r in records) and any(value not in r for r in records)
        for value in values
    )


def crashed_on_missing(error_type: str | None, message: str | None, workspace: Path | None) -> bool:
    """Was a crash on the input a missing value: a ValueError on a blank or NA cell ('',
    'N/A', '-') of a column that has other values, or a KeyError on a JSON key some records
    lack under every spelling? Leaving such a value out is often what the task means (an
    average of the values given), so a program that skips it is not told that skipping loses
    data. A '' the program made itself, or a key spelled 'Humidity' elsewhere, is no missing
    value."""
    values = _quoted_strings(message or "")
    if not values or workspace is None or not workspace.is_dir():
        return False
    # strptime names the value first ("time data '' does not match format '%Y'").
    value = values[0] if "time data" in (message or "") else values[-1]
    files = list(input_files(workspace))
    if error_type == "ValueError":
        return value.strip().lower() in MISSING_CELLS and any(
            _missing_in_a_column(value, raw.decode("utf-8", errors="replace")) for _, raw in files
        )
    if error_type != "KeyError":
        return False
    for _, raw in files:
        text = raw.decode("utf-8", errors="replace")
        if is_json(text):
            records = [r for r in json_records(text) if isinstance(r, dict)]
            spelled = [{k.casefold() for k in r} for r in records]
            if any(value in r for r in records) and any(value.casefold() not in s for s in spelled):
                return True
    return False


def _missing_in_a_column(value: str, text: str) -> bool:
    """Is `value` a cell of a column of `text` that also holds values that are not missing?"""
    rows = [] if is_json(text) else csv_rows(text)
    return bool(rows) and any(
        value.strip() in {v.strip() for v in column}
        and any(v.strip().lower() not in MISSING_CELLS for v in column)
        for column in columns(rows)
    )


def data_evidence(
    message: str | None, workspace: Path | None, *, check_failed: bool = False
) -> str | None:
    """What the input shows about a failure: the evidence for the values it quotes
    (`input_evidence`); else, for a failure that quotes no input value (a wrong total, a
    type error), the data's profile (`input_profile`), the lines naming a word of the
    message first, at most two. Rows that repeat (`_repeated_rows`) are shown for a check's
    verdict only, first: the one fault of the data that no single value shows."""
    found = input_evidence(message, workspace, check_failed=check_failed)
    if found and not check_failed:
        return found  # a crash's own values: no profile needed
    if check_failed and _keys_inside(message or ""):
        return found  # a field added or left out: what the data shows is the key's, if any
    profile = input_profile(workspace)
    repeats = [line for line in profile if line.startswith(REPEATS)]
    shown = repeats if check_failed else []
    if found:
        return "\n".join([found, *shown])
    words = {w.lower() for w in re.findall(r"\w+", message or "")}
    lines = [line for line in profile if line not in repeats]
    lines.sort(key=lambda line: not words & {w.lower() for w in re.findall(r"\w+", line[:80])})
    return "\n".join([*shown, *lines[:MAX_PROFILE_LINES]]) or None


def _literals(message: str) -> list[str]:
    values: list[str] = []
    for match in _QUOTED.finditer(message):
        value = _literal(match.group(0))
        if value is not None and value.strip() and value not in values:
            values.append(value)
    return values


def _in_table(
    name: Path,
    text: str,
    rows: list[list[str]],
    literal: str,
    quoted: Quoted,
    keys: frozenset[str] = frozenset(),
) -> str | None:
    """What a delimited file's header and cells show about `literal` (see the module's list)."""
    if not rows:
        return None
    header, body = rows[0], rows[1:]
    names = [loosely(cell) for cell in header]
    if quoted == "output key" and loosely(literal) in names and body:
        # An output key named after a column: its value comes from that column's values.
        column = names.index(loosely(literal))
        return column_line(name, header[column], columns(rows)[column])
    if quoted == "other" and loosely(literal) in names:
        # A header name the program did not find: how the csv module reads the header by
        # default (a BOM, stray spaces, another case, or the whole line as one name when the
        # delimiter is not a comma).
        read = default_header(text)
        if literal not in read:
            return f"the header of {name} as Python reads it: {read!r}"
    if quoted == "converted" and literal not in header and loosely(literal) in names:
        return f"the header of {name} as Python reads it: {header!r}"
    if quoted == "converted" and literal in header and not any(literal in row for row in body):
        # A program converting a column name parsed the header row as data.
        return f"{literal!r} is a column name, in the header row of {name}: {header!r}"
    for column, values in enumerate(columns(rows)):
        if any(value.strip() == literal.strip() for value in values):
            line = column_line(name, header[column], values)
            group = group_line(name, rows, column, literal) if literal in keys else None
            return f"{line}\n{group}" if group else line
    return None


def _sharing_words(
    name: Path, text: str, rows: list[list[str]], key: str, quoted: Quoted
) -> str | None:
    """For an output key: the column (with values) sharing the most words of four letters or
    more with it ('recommend_pct' -> 'would_recommend'); None when none or several do."""
    if quoted != "output key" or len(rows) < 2:
        return None
    words = _name_words(key)
    shared = [len(words & _name_words(cell)) for cell in rows[0]]
    best = max(shared, default=0)
    if not best or shared.count(best) > 1:
        return None
    column = shared.index(best)
    return column_line(name, rows[0][column], columns(rows)[column])


def _lines_holding(
    name: Path, text: str, rows: list[list[str]], literal: str, quoted: Quoted
) -> str | None:
    needle = literal.strip()
    holding = [line for line in text.splitlines() if needle in line]
    # The value standing on its own ('200', a status) before inside a longer token
    # ('2001:db8::1', an address), which says nothing about where the value comes from.
    alone = re.compile(rf"(?<![0-9A-Za-z_]){re.escape(needle)}(?![0-9A-Za-z_])")
    lines = [line for line in holding if alone.search(line)] or holding
    if not lines:
        return None
    shown = ", ".join(repr(line[:160]) for line in lines[:3])
    return f"lines of {name} that contain {literal!r}: {shown}"


def _name_words(name: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", name.lower()) if len(w) >= 4}


def _decode_evidence(files: list[tuple[Path, bytes]], byte: int, position: int) -> str | None:
    """The bytes around a decoding error, and that line as the file's likely encoding reads
    it: raw bytes say *that* the text is not UTF-8; the line read ('Inés Peña') says what it
    is, where the refiner otherwise drops the bytes (`errors='ignore'`: 'Rsti')."""
    for path, raw in files:
        if position < len(raw) and raw[position] == byte:
            around = raw[max(0, position - 20) : position + 20]
            told = f"bytes around position {position} of {path.name}: {around!r}"
            encoding, line = _read_line(raw, position)
            return f"{told}; the whole file decodes as {encoding}, where that line reads {line!r}"
    return None


def _read_line(raw: bytes, position: int) -> tuple[str, str]:
    """The 8-bit encoding that decodes all of `raw` (cp1252, else latin-1, which decodes any
    bytes; a file with NUL bytes, such as UTF-16, is no input text here) and the line
    holding byte `position` in it (one byte, one character)."""
    for encoding in ("cp1252", "latin-1"):
        with contextlib.suppress(UnicodeDecodeError):
            return encoding, _line_at(raw.decode(encoding), position)
    raise AssertionError("latin-1 decodes any bytes")


def _line_at(text: str, index: int) -> str:
    """The line holding `index`, cut to MAX_LINE characters around it (a long line or one
    JSON document still shows the character that failed)."""
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    end = len(text) if end == -1 else end
    start = max(start, min(index - MAX_LINE // 2, end - MAX_LINE))
    return text[start:end][:MAX_LINE]
