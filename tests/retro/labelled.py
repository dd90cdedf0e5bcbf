"""A labelled lesson set for consolidation quality: root-cause groups x paraphrases + singletons.

Each group has subjects x predicates x frames, so paraphrases vary in words, order and length
(not only in a suffix). Several groups share one error type, so a bucket holds different
root causes that a consolidator must keep apart. Two fix variants per group exercise
"same root cause, different fix" merges.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from memory.types import Evidence, LessonDraft


@dataclass(frozen=True)
class Group:
    label: str
    error_type: str
    subjects: tuple[str, ...]
    predicates: tuple[str, ...]
    fixes: tuple[str, ...]


GROUPS: tuple[Group, ...] = (
    Group(
        "currency",
        "ValueError",
        ("amount values", "the price column", "money strings read from the CSV"),
        (
            "start with a currency symbol such as '$'",
            "carry a dollar sign that float() rejects",
            "are prefixed with '$' so they are not plain numbers",
        ),
        (
            "strip '$' and spaces before float()",
            "parse with Decimal after removing the currency sign",
        ),
    ),
    Group(
        "decimal_comma",
        "ValueError",
        ("European numbers", "the quantity field", "values exported by a German spreadsheet"),
        (
            "use a comma as the decimal separator",
            "are written like 3,5 instead of 3.5",
            "have ',' where float() expects a decimal point",
        ),
        ("replace ',' with '.' before converting", "parse with locale-aware number parsing"),
    ),
    Group(
        "thousands_sep",
        "ValueError",
        ("large totals", "the revenue column", "numbers formatted for display"),
        (
            "contain thousands separators like 1,200",
            "include commas between digit groups",
            "are grouped with ',' every three digits",
        ),
        ("remove the grouping commas before int()", "strip ',' then convert the digits"),
    ),
    Group(
        "empty_cell",
        "ValueError",
        ("some rows", "missing measurements in the file", "blank cells of the sheet"),
        (
            "hold an empty string where a number is expected",
            "are '' and cannot be converted",
            "leave the numeric field empty",
        ),
        ("skip or default empty fields before converting", "treat '' as missing and use 0"),
    ),
    Group(
        "bom",
        "KeyError",
        ("the first header name", "the CSV header row", "column names read by DictReader"),
        (
            "starts with a UTF-8 byte order mark",
            "carries an invisible BOM '\\ufeff' prefix",
            "has a hidden BOM so the key 'id' does not match",
        ),
        ("open the file with encoding='utf-8-sig'", "strip '\\ufeff' from the header names"),
    ),
    Group(
        "header_case",
        "KeyError",
        ("header names", "the column titles in the file", "DictReader keys"),
        (
            "differ in case from the names the code uses",
            "are capitalised like 'Amount' not 'amount'",
            "use a different letter case than expected",
        ),
        ("normalise header names to lower case", "look keys up case-insensitively"),
    ),
    Group(
        "header_space",
        "KeyError",
        ("header cells", "the column names", "field names after splitting on commas"),
        (
            "have surrounding whitespace like ' amount'",
            "keep a space after each comma",
            "are padded with blanks so lookups miss",
        ),
        ("strip whitespace from every header name", "use skipinitialspace=True in csv.reader"),
    ),
    Group(
        "missing_key",
        "KeyError",
        ("optional JSON fields", "some records of the API response", "nested objects in the input"),
        (
            "are absent in part of the records",
            "do not always contain the key the code reads",
            "omit the field when it has no value",
        ),
        ("use dict.get with a default", "check for the key before reading it"),
    ),
    Group(
        "tz_naive",
        "TypeError",
        (
            "timestamps from two sources",
            "datetimes parsed from the log",
            "event times in the export",
        ),
        (
            "mix timezone-aware and naive values",
            "are partly naive and partly carry an offset",
            "cannot be compared because only some have tzinfo",
        ),
        (
            "make every datetime aware in UTC",
            "attach timezone.utc to naive values before comparing",
        ),
    ),
    Group(
        "none_arith",
        "TypeError",
        ("a lookup result", "the value returned for a missing item", "fields loaded as null"),
        (
            "is None and then used in arithmetic",
            "comes back as None and gets added to a number",
            "are null so the sum meets a NoneType",
        ),
        ("check for None before adding", "filter out None values before summing"),
    ),
    Group(
        "str_int_concat",
        "TypeError",
        ("numbers read from input", "the counter parsed from text", "values taken from argv"),
        (
            "stay strings and are concatenated with ints",
            "are str, so '+' mixes str and int",
            "were never converted from text before the addition",
        ),
        ("convert the input with int() first", "cast the parsed text to a number before use"),
    ),
    Group(
        "json_single_quotes",
        "JSONDecodeError",
        ("the config text", "payloads written by a Python repr", "the data file"),
        (
            "uses single quotes instead of double quotes",
            "is a Python dict literal, not JSON",
            "has 'key' quoting that JSON does not allow",
        ),
        ("parse it with ast.literal_eval", "fix the producer to write json.dumps output"),
    ),
    Group(
        "json_trailing_comma",
        "JSONDecodeError",
        ("hand-edited JSON files", "the generated settings", "lists in the input document"),
        (
            "end with a trailing comma before the closing bracket",
            "leave a comma after the last item",
            "contain ',]' or ',}' that the strict parser rejects",
        ),
        (
            "remove trailing commas before json.loads",
            "emit the file with json.dump instead of by hand",
        ),
    ),
    Group(
        "encoding_latin1",
        "UnicodeDecodeError",
        ("the legacy export", "names with accents in the file", "the input text"),
        (
            "is encoded in Latin-1, not UTF-8",
            "was saved as cp1252 so utf-8 decoding fails",
            "uses a single-byte encoding for é and ü",
        ),
        ("open it with encoding='latin-1'", "detect the encoding and decode with it"),
    ),
    Group(
        "rounding",
        "AssertionError",
        ("the computed total", "averages printed by the script", "the reported percentage"),
        (
            "is not rounded to two decimals as required",
            "keeps full float precision instead of 2 places",
            "shows binary float noise like 12.499999",
        ),
        ("round the final value to 2 decimals", "format the number with :.2f"),
    ),
    Group(
        "off_by_one",
        "AssertionError",
        ("the loop over the rows", "range() in the counting code", "the slice of the list"),
        (
            "stops one element early",
            "excludes the last item by an off-by-one bound",
            "uses < where <= was needed",
        ),
        ("include the end bound in the range", "iterate over the list directly"),
    ),
    Group(
        "header_counted",
        "AssertionError",
        ("the row count", "the number of records summed", "the data line total"),
        (
            "includes the CSV header line",
            "counts the header as a data row",
            "is one too high because the first line is the header",
        ),
        ("skip the header with next(reader)", "use csv.DictReader so the header is not data"),
    ),
    Group(
        "sort_order",
        "AssertionError",
        ("the output list", "the ranking written to the file", "the printed results"),
        (
            "is sorted ascending but descending was required",
            "comes out in the wrong order",
            "is not ordered by score from high to low",
        ),
        ("sort with reverse=True", "sort by the negated score"),
    ),
    Group(
        "recursion",
        "RecursionError",
        ("the recursive walk", "the tree traversal", "the nested parser"),
        (
            "goes deeper than Python's recursion limit",
            "recurses once per item on long inputs",
            "has no base case for the empty input",
        ),
        ("rewrite it iteratively with a stack", "add the missing base case"),
    ),
    Group(
        "memory_load",
        "MemoryError",
        ("the whole file", "all rows of the large log", "the complete dataset"),
        (
            "is loaded into memory at once",
            "is read with read() instead of streamed",
            "is materialised as a list before processing",
        ),
        ("stream the file line by line", "process the rows in chunks"),
    ),
)

FRAMES = (
    "{s} {p}",
    "because {s} {p}",
    "The failure happened since {s} {p}.",
    "{S} {p}, which breaks the conversion",
    "root cause: {s} {p}",
)

SINGLETONS: tuple[tuple[str, str, str], ...] = (
    ("ValueError", "the date string uses month names in French", "map French month names first"),
    ("KeyError", "the environment variable HOME is not set in the sandbox", "default to the cwd"),
    ("TypeError", "a generator is indexed like a list", "convert it with list() first"),
    ("AssertionError", "the output file is written without a trailing newline", "end with '\\n'"),
    (
        "JSONDecodeError",
        "the response is empty because the request timed out",
        "retry and check length",
    ),
    ("UnicodeDecodeError", "a binary PNG is opened in text mode", "open the file with 'rb'"),
    ("RecursionError", "__repr__ of two objects references each other", "break the cycle in repr"),
    (
        "MemoryError",
        "a regex with nested quantifiers backtracks on long lines",
        "use a simpler pattern",
    ),
)


@dataclass(frozen=True)
class Labelled:
    draft: LessonDraft
    label: str


def labelled_set(per_group: int = 10, seed: int = 7, scope: str = "demo") -> list[Labelled]:
    """per_group paraphrases for each group plus the singletons, shuffled deterministically."""
    rng = random.Random(seed)
    out: list[Labelled] = []
    for g in GROUPS:
        combos = list(itertools.product(g.subjects, g.predicates, FRAMES))
        rng.shuffle(combos)
        for n, (s, p, frame) in enumerate(combos[:per_group]):
            text = frame.format(s=s, S=s[0].upper() + s[1:], p=p)
            out.append(Labelled(_draft(scope, g.error_type, text, g.fixes[n % 2], n), g.label))
    for n, (error_type, cause, fix) in enumerate(SINGLETONS):
        out.append(Labelled(_draft(scope, error_type, cause, fix, n), f"single_{n}"))
    rng.shuffle(out)
    return out


def _draft(scope: str, error_type: str, cause: str, fix: str, n: int) -> LessonDraft:
    return LessonDraft(
        scope=scope,
        error_type=error_type,
        symptom=f"{error_type} in solution.py",
        root_cause=cause,
        fix=fix,
        applies_when="reading task input files",
        evidence=(Evidence(run_id=f"run-{n}", excerpt=cause[:40]),),
    )
