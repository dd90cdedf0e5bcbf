"""Realistic lessons, queries and paraphrases used to calibrate and test thresholds on MiniLM."""

from __future__ import annotations

from memory.types import LessonDraft

LESSONS: dict[str, LessonDraft] = {
    "currency": LessonDraft(
        error_type="runtime_error",
        symptom="ValueError: could not convert string to float: '$1,200.50' while summing prices",
        root_cause="the price column holds currency strings with a dollar sign and thousands "
        "separators, so float() fails",
        fix="strip the currency symbol and the thousands separators before parsing; parse "
        "money with Decimal",
        applies_when="reading money amounts from CSV or user input",
    ),
    "bom": LessonDraft(
        error_type="runtime_error",
        symptom="KeyError: 'id' although the CSV header clearly starts with id",
        root_cause="the file starts with a UTF-8 byte order mark, so the first header is "
        "'\\ufeffid' instead of 'id'",
        fix="open the file with encoding='utf-8-sig' so the BOM is removed",
        applies_when="CSV files exported from Excel or Windows tools",
    ),
    "timezone": LessonDraft(
        error_type="check_failed",
        symptom="daily totals are off by one day for events near midnight",
        root_cause="timestamps carry a UTC offset but were compared as naive local datetimes",
        fix="parse with the offset, convert to UTC (or the report's zone) before taking .date()",
        applies_when="grouping timestamped events by calendar day",
    ),
    "decimal_comma": LessonDraft(
        error_type="check_failed",
        symptom="totals are 100 times too large for European invoices",
        root_cause="amounts use a decimal comma ('12,50'), and removing the comma turned 12,50 "
        "into 1250",
        fix="detect the locale: when the comma is the decimal separator replace it with a point "
        "and drop the dots that group thousands",
        applies_when="numbers written in German, French or other European formats",
    ),
    "recursion": LessonDraft(
        # As the loop files it (agent.classify: a RecursionError is a runtime error of that
        # type); a seed query stating the RecursionError is gated on those types.
        error_type="RecursionError",
        symptom="RecursionError: maximum recursion depth exceeded in flatten()",
        root_cause="the recursive flatten has no base case for strings, which are iterable "
        "themselves, so it recurses forever",
        fix="treat str and bytes as atoms before iterating; or flatten with an explicit stack",
        applies_when="flattening nested lists that may contain strings",
    ),
    "off_by_one": LessonDraft(
        error_type="check_failed",
        symptom="expected 10 items but got 9 from the pagination helper",
        root_cause="range(1, n) stops before n, so the last page was skipped",
        fix="use range(1, n + 1) or iterate until an empty page is returned",
        applies_when="loops over pages or inclusive numeric ranges",
    ),
    "mutable_default": LessonDraft(
        error_type="check_failed",
        symptom="second call of add_item() returns items from the first call",
        root_cause="a mutable default argument (items=[]) is shared between calls",
        fix="default to None and create a new list inside the function",
        applies_when="functions with list or dict default arguments",
    ),
    "timeout_http": LessonDraft(
        error_type="timeout",
        symptom="the check timed out after 60 s while fetching the exchange rates",
        root_cause="requests.get was called without a timeout and the sandbox has no network, "
        "so it hung until the check was killed",
        fix="never fetch from the network in solutions; read the rates from the provided file, "
        "and always pass timeout= to network calls",
        applies_when="tasks that mention external data or APIs",
    ),
    "syntax_fstring": LessonDraft(
        error_type="syntax_error",
        symptom="SyntaxError: f-string: unmatched '[' in line 12",
        root_cause="the f-string reused the same quote character inside the braces "
        '(f"{row["name"]}"), which Python 3.11 does not allow',
        fix="use the other quote inside the braces: f\"{row['name']}\"",
        applies_when="f-strings that index dicts on Python before 3.12",
    ),
    "json_nan": LessonDraft(
        error_type="runtime_error",
        symptom="json.decoder.JSONDecodeError: Expecting value: line 1 column 9 (char 8)",
        root_cause="the input contains NaN values written by pandas, which strict JSON parsers "
        "reject",
        fix="write with allow_nan=False after replacing NaN by null, or parse with a reader that "
        "accepts NaN",
        applies_when="exchanging JSON produced by pandas or numpy",
    ),
    "integer_division": LessonDraft(
        error_type="check_failed",
        symptom="average rating is 3 instead of 3.5",
        root_cause="the average was computed with floor division (//), which truncates",
        fix="use true division (/) and round only when printing",
        applies_when="computing averages or ratios",
    ),
    "file_encoding": LessonDraft(
        error_type="runtime_error",
        symptom="UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 34",
        root_cause="the input file is Latin-1 (cp1252) encoded, not UTF-8",
        fix="open it with encoding='cp1252' (or detect the encoding) instead of the default",
        applies_when="text files from legacy Windows systems",
    ),
}

# A query the loop would send (error output or a task goal) -> the lesson it should find.
RELATED_QUERIES: list[tuple[str, str]] = [
    ("ValueError: could not convert string to float: '$3,450.00'", "currency"),
    ("KeyError: 'id' when reading rows with csv.DictReader from export.csv", "bom"),
    ("events at 23:30 are counted on the wrong day in the daily report", "timezone"),
    ("invoice total 125000.0 but expected 1250.00 for amounts like 1.250,00", "decimal_comma"),
    (
        "RecursionError: maximum recursion depth exceeded while flattening a nested list",
        "recursion",
    ),
    ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe4 in position 120", "file_encoding"),
    (
        "the function returns values left over from a previous call (list default argument)",
        "mutable_default",
    ),
    (
        "check timed out after 60 seconds: the script was stuck downloading exchange rates",
        "timeout_http",
    ),
]

# Nothing in LESSONS is about these: recall must return nothing for them.
UNRELATED_QUERIES: list[str] = [
    "Write a haiku about autumn leaves falling in the park",
    "Plan a three day trip to Lisbon with a budget for food and museums",
    "Translate 'good morning' into Japanese and Korean",
    "Summarise the plot of Pride and Prejudice in two sentences",
    "Draw an ASCII art cat",
    "What is the capital of Australia?",
    "Compose a polite email declining a meeting invitation",
    "Sort the list of names alphabetically and print them",
    "Generate a random password policy document for new employees",
    "Explain photosynthesis to a ten year old",
]

# (lesson key, root cause, fix): the same lesson written differently by a second run.
PARAPHRASES: list[tuple[str, str, str]] = [
    (
        "currency",
        "price values contain a dollar sign and comma thousands separators, so converting them "
        "with float() fails",
        "remove the currency symbol and thousands separators before converting; use Decimal "
        "for money amounts",
    ),
    (
        "bom",
        "the CSV begins with a UTF-8 BOM, so the first column name is '\\ufeffid' rather than 'id'",
        "read the file with encoding='utf-8-sig' to drop the byte order mark",
    ),
    (
        "mutable_default",
        "the default argument items=[] is a mutable list shared across all calls",
        "use None as the default and create a fresh list in the function body",
    ),
    (
        "integer_division",
        "floor division (//) was used for the mean, which truncates the result",
        "use normal division (/) and round only for display",
    ),
]
