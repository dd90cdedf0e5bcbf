"""The look at a task's data before any program runs: what `agent.evidence` shows a
failure, taken at the task start (recall's seed query and data gate, `agent.queries`).

- `input_profile`: in the words of the crash evidence, a header Python reads differently
  from how it looks, each column of mixed or symbol-bearing formats, rows repeated exactly;
- `input_symbols`: a value for each data symbol anywhere in the input, and a missing value.

Only the task's workspace is read, never the task directory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from agent.readings import CODES
from agent.tables import (
    column_line,
    columns,
    csv_rows,
    default_header,
    is_json,
    json_records,
    shape,
)

MAX_FILE_BYTES = 5_000_000
# What needs no second look: a header of plain names, a column of words or plain numbers.
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS, _NUMBER = re.compile(r"a( a)*"), re.compile(r"-?9(\.9)?")
_PLAIN_ID = re.compile(r"a[-_]?9|9-9-9")


def input_files(workspace: Path) -> Iterator[tuple[Path, bytes]]:
    """The workspace's text files (no NUL in the first 4 KiB), read once."""
    for path in sorted(workspace.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_FILE_BYTES:
            raw = path.read_bytes()
            if b"\0" not in raw[:4096]:
                yield path, raw


def input_profile(workspace: Path | None) -> list[str]:
    """The look at the data before any program runs, in the words of the crash evidence:

    - a file that is not UTF-8: the bytes around the first undecodable one;
    - a delimited file: its header as Python's csv module reads it by default, when that
      is not a list of plain names (a BOM, stray spaces, another delimiter);
    - each column whose values are not plain words or numbers (more than one format, one
      with symbols in it: '$', '%', a decimal comma, or one word in several cases), varied
      formats first.

    A task start then reads like the symptom of a lesson learned on data of the same kind.
    """
    if workspace is None or not workspace.is_dir():
        return []
    lines: list[str] = []
    for path, raw in input_files(workspace):
        name = path.relative_to(workspace)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            around = raw[max(0, exc.start - 20) : exc.start + 20]
            lines.append(f"bytes around position {exc.start} of {name}: {around!r}")
            continue
        rows = [] if is_json(text) else csv_rows(text)  # JSON lines are not columns
        if not rows:
            continue
        read = default_header(text)
        if any(not _PLAIN_NAME.fullmatch(cell) for cell in read):
            lines.append(f"the header of {name} as Python reads it: {read!r}")
        for title, values in zip(rows[0], columns(rows), strict=True):
            if _unusual({shape(v) for v in set(values)}) or _case_variants(values):
                lines.append(column_line(name, title, values))
        repeats = _repeated_rows(name, rows)
        if repeats:
            lines.append(repeats)
    return lines


REPEATS = "rows that repeat an earlier row exactly in "


def _repeated_rows(name: Path, rows: list[list[str]]) -> str | None:
    """Body rows that repeat an earlier row cell for cell, when a column is otherwise unique
    (an order number, a ticket id) and the repeats are at most a third of the rows: a record
    sent twice, which every count and total over the file takes twice. Blank rows, small
    files and files where rows are often alike (a log, tallies with no identifying column)
    say nothing."""
    if len(rows) < 3 or len(rows[0]) < 2 or not all(map(_PLAIN_NAME.fullmatch, rows[0])):
        return None
    seen: dict[tuple[str, ...], list[str]] = {}
    repeats: list[list[str]] = []
    for row in rows[1:]:
        key = tuple(cell.strip() for cell in row)
        if not any(key):
            continue
        if key in seen:
            repeats.append(row)
        seen.setdefault(key, row)
    unique = [
        title
        for title, values in zip(rows[0], columns([rows[0], *seen.values()]), strict=True)
        if len(set(values)) == len(values) == len(seen)
    ]
    if not unique or len(seen) < 5 or not 0 < len(repeats) <= (len(rows) - 1) / 3:
        return None  # a few rows, or repeats the rule rather than the exception
    shown = ", ".join(repr(row)[:120] for row in repeats[:2])
    return (
        f"{REPEATS}{name}: {len(repeats)} of {len(rows) - 1}, though column {unique[0]!r} is "
        f"otherwise unique; e.g. {shown}"
    )


# A value carrying a data symbol (a currency sign, '%', ';', '|', a BOM) or a currency code
# beside a number: what `input_symbols` quotes, one example per symbol.
_SYMBOL_VALUE = re.compile(
    r"[^\s,\"']{0,12}[\ufeff$€£¥%;|][^\s,\"']{0,12}"
    rf"|\b{CODES}\s?\d[\d.,]*|\d[\d.,]*\s?{CODES}\b"
)


def input_symbols(workspace: Path | None) -> str | None:
    """One line quoting a value for each data symbol anywhere in the input files, and one
    quoting a cell that marks a missing value ('', 'N/A', '-') if a delimited file has one;
    None when there is neither.

    The heads and the profile show a file's first lines and its delimited columns; a '$' on
    line 500 of a log, in a JSON file or after a title line shows in neither. Recall's data
    gate (`LessonQuery.data`) judges a task on its data, so it reads this line beside them.
    A file that is not UTF-8 is read as cp1252 (its '€' is byte 0x80).
    """
    if workspace is None or not workspace.is_dir():
        return None
    found: dict[str, str] = {}
    files = list(input_files(workspace))
    for _, raw in files:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("cp1252", errors="replace")
        for match in _SYMBOL_VALUE.finditer(text):
            value = match.group(0)
            for kind in [c for c in value if c in "\ufeff$€£¥%;|"] or ["code"]:
                found.setdefault(kind, value)
    missing = _missing_cell(files)
    lines = [
        *(["values with data symbols in the input: " + ", ".join(map(repr, found.values()))]
          if found else []),
        *([f"a missing value in the input: {missing!r}"] if missing is not None else []),
    ]  # fmt: skip
    return "\n".join(lines) or None


# Cells that mark a value as absent (`memory.marks`'s "∅" mark reads them when quoted).
MISSING_CELLS = frozenset({"", "na", "n/a", "null", "none", "nan", "-", "?", "—", "–"})


def _missing_cell(files: list[tuple[Path, bytes]]) -> str | None:
    """A cell that marks a missing value, or None: a blank or NA marker in a delimited
    file's column whose other values are mostly numbers or dates (a region 'NA' among
    'EU' and 'APAC' is a name), in a column with a header; or a JSON record's null or ""
    value, or a key some records lack."""
    for _, raw in files:
        text = raw.decode("utf-8", errors="replace")
        if is_json(text):
            found = _missing_in_records(text)
            if found is not None:
                return found
            continue
        rows = csv_rows(text)
        for title, values in zip(rows[0], columns(rows), strict=True) if rows else ():
            given = [v for v in values if v.strip().lower() not in MISSING_CELLS]
            marked = [v.strip() for v in values if v.strip().lower() in MISSING_CELLS]
            digits = sum(any(ch.isdigit() for ch in v) for v in given)
            if title.strip() and marked and given and digits * 2 >= len(given):
                return marked[0]
    return None


def _missing_in_records(text: str) -> str | None:
    records = [r for r in json_records(text) if isinstance(r, dict)]
    keys = {k for r in records for k in r}
    if any(v is None or v == "" for r in records for v in r.values()):
        return ""
    return "" if any(k not in r for r in records for k in keys) else None


def _unusual(shapes: set[str]) -> bool:
    """Values with symbols in them, or words and numbers in one column ('yes', '1', 'n/a')."""
    words = {s for s in shapes if _WORDS.fullmatch(s)}
    numbers = {s for s in shapes if _NUMBER.fullmatch(s)}
    plain = words | numbers | {s for s in shapes if _PLAIN_ID.fullmatch(s)}
    return shapes != plain or bool(words and numbers)


def _case_variants(values: list[str]) -> bool:
    """One word written in several cases ('Yes', 'yes', 'YES'): a program comparing the
    strings misses all but one."""
    distinct = {v.strip() for v in values}
    return len({v.lower() for v in distinct}) < len(distinct)
