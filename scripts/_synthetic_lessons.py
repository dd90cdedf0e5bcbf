"""The templated lessons of the memory benchmarks (bench_memory, bench_lexical, bench_console).

Lessons are generated from templates (error families x symptoms x causes x fixes, with
slots for columns, files, functions, values) and spread over 20 project scopes plus
"global"; queries read like the error output of a new run. Deterministic for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from memory import LessonDraft

SCOPES = [f"proj-{i:02d}" for i in range(20)]
COLS = ["price", "amount", "total", "unit_cost", "revenue", "balance", "fee", "salary"]
FILES = ["sales.csv", "export.csv", "orders.tsv", "ledger.xlsx", "events.jsonl", "users.csv"]
FUNCS = ["parse_row", "load_prices", "daily_totals", "flatten", "fetch_rates", "merge_users"]
LIBS = ["pandas", "csv", "json", "datetime", "requests", "decimal", "re"]

# error_type -> list of (symptom, root cause, fix) templates.
FAMILIES: dict[str, list[tuple[str, str, str]]] = {
    "runtime_error": [
        (
            "ValueError: could not convert string to float: '${v},200.50' in {col}",
            "the {col} column of {file} holds currency strings with '$' and thousands separators",
            "strip the currency symbol and separators before float(); use Decimal for money",
        ),
        (
            "KeyError: '{col}' while reading {file} with csv.DictReader",
            "{file} starts with a UTF-8 byte order mark so the first header is '\\ufeff{col}'",
            "open {file} with encoding='utf-8-sig'",
        ),
        (
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x{v}e in {file}",
            "{file} is cp1252 encoded, not UTF-8",
            "open {file} with encoding='cp1252' or detect it",
        ),
        (
            "TypeError: unsupported operand type(s) for +: 'int' and 'str' in {func}",
            "{func} mixes numbers parsed by {lib} with raw strings from {file}",
            "convert every {col} value once at load time and validate the type",
        ),
        (
            "AttributeError: 'NoneType' object has no attribute 'group' in {func}",
            "the regex in {func} does not match rows where {col} is empty",
            "check the match before calling .group() and skip or report bad rows",
        ),
    ],
    "check_failed": [
        (
            "daily totals in {func} are off by one day for events near midnight",
            "timestamps in {file} carry a UTC offset but were compared as naive datetimes",
            "parse the offset with {lib}, convert to UTC before taking .date()",
        ),
        (
            "{col} totals are 100 times too large for European rows of {file}",
            "{col} uses a decimal comma and removing commas turned 12,50 into 1250",
            "replace the decimal comma by a point and drop thousands dots when the locale says so",
        ),
        (
            "expected {v} rows from {func} but got {v}9",
            "range(1, n) in {func} stops before n so the last page is skipped",
            "use range(1, n + 1) or loop until an empty page",
        ),
        (
            "average {col} is truncated to an integer in {func}",
            "{func} uses floor division // for the mean",
            "use true division / and round for display",
        ),
        (
            "second call of {func} returns rows from the first call",
            "{func} has a mutable default argument rows=[] shared between calls",
            "default to None and build a new list inside {func}",
        ),
    ],
    "syntax_error": [
        (
            "SyntaxError: f-string: unmatched '[' at line {v} of {func}",
            "the f-string in {func} reuses the outer quote inside the braces (Python 3.11)",
            "use the other quote character inside the braces",
        ),
        (
            "IndentationError: unexpected indent at line {v}",
            "the generated code mixes tabs and spaces in {func}",
            "re-indent {func} with 4 spaces",
        ),
    ],
    "timeout": [
        (
            "the check timed out after {v} s while {func} fetched data",
            "{func} calls {lib} without a timeout and the sandbox has no network",
            "read the data from {file} instead of the network; always pass timeout=",
        ),
        (
            "the check timed out after {v} s in {func} on the large {file}",
            "{func} is quadratic: it rescans {file} for every row",
            "index rows by key in a dict once, then look them up",
        ),
    ],
    "resource_error": [
        (
            "RecursionError: maximum recursion depth exceeded in {func}",
            "{func} recurses into strings, which are iterable themselves",
            "treat str and bytes as atoms, or use an explicit stack",
        ),
        (
            "MemoryError while loading {file} in {func}",
            "{func} reads the whole of {file} into memory with {lib}",
            "stream {file} in chunks and aggregate incrementally",
        ),
    ],
}


def generate(
    n: int, seed: int, scopes: Sequence[str] = SCOPES, global_share: float = 0.05
) -> list[LessonDraft]:
    """n varied lesson drafts (deterministic for a seed); `global_share` of them in "global"."""
    rng = random.Random(seed)
    families = [(t, tpl) for t, tpls in FAMILIES.items() for tpl in tpls]
    drafts = []
    for i in range(n):
        error_type, (sym, cause, fix) = families[i % len(families)]
        slots = {
            "col": rng.choice(COLS),
            "file": rng.choice(FILES),
            "func": rng.choice(FUNCS),
            "lib": rng.choice(LIBS),
            "v": str(rng.randint(1, 999)),
        }
        scope = "global" if rng.random() < global_share else rng.choice(scopes)
        drafts.append(
            LessonDraft(
                scope=scope,
                error_type=error_type,
                symptom=sym.format(**slots) + f" (case {i})",
                root_cause=cause.format(**slots) + f" [ref {seed}-{i}]",
                fix=fix.format(**slots),
                applies_when=f"{slots['lib']} code reading {slots['file']}",
            )
        )
    return drafts


def bench_queries(count: int, *, pool: int, seed: int) -> list[str]:
    """Queries read like the error output of a new run: a pool lesson's symptom."""
    lessons = generate(pool, seed=10_000 + seed)
    return [f"{lessons[k % pool].symptom.split(' (case')[0]} #{k}" for k in range(count)]
