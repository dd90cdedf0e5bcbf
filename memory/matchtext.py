"""The text recall compares: a lesson's symptom + root cause and a query, minus their template.

A lesson's symptom is written by a template ("runtime error ValueError at solution.py:8:
ValueError: <message> (in the input: <evidence>)") and the reflection query by another
("kind: runtime_error (ValueError)\\nwhere: solution.py:8\\nmessage: ValueError: <message>
..."). Embedded as they are, two unrelated failures share most of their words (the kind, the
error type, a location, the labels), and that shared frame lifts their cosine: measured with
all-MiniLM-L6-v2, two unrelated ValueErrors of the same template scored 0.66, and 0.49 once
the frame was gone. The error type and the kind add nothing to similarity anyway: at the
reflection stage recall already gates on them (`memory.recall`).

So both sides are embedded (and BM25-indexed) through `match_text`, one set of general rules:

- the feedback labels (`kind:`, `where:`, `message:`, `failing example:`, `in the input:`,
  `issue:`): a `kind:` or `where:` line goes whole (kind, error type, location); the other
  labels go and their content stays;
- a leading kind phrase ("runtime error", "check_failed", ...) with the error type and the
  location that follow it ("runtime error ValueError at solution.py:8:");
- an exception name opening a message ("ValueError: ", "json.decoder.JSONDecodeError: "),
  unless the message is a bare value ("KeyError: 'qty'" keeps "KeyError": without it
  nothing says what happened; on scripts/bench_recall.py dropping it too emptied the
  recall of 10 more labelled errors);
- locations anywhere: `name.py:12`, `File "...", line 12, in f`, `line 12`;
- the evidence's readings of a column (`agent.readings`: "; as numbers: '1.010,9' is
  1010.9 (',' marks decimals, ...)", "; yes/no written 7 ways: ... mean yes; ... mean no"):
  the values stay, the words every reading repeats go (with them, currency starts
  recalled the decimal-comma lesson, and HumanEval's "decimal part" goal too).

What stays is the content: the message, its literal values, the input evidence, the failing
code, the root cause. A text made only of template keeps its original words (an empty text
would embed to noise). The stored symptom is never changed; only what is compared is.

`INDEX_TEXT_VERSION` names these rules: a store records the version its index was built with
(`memory.wiring`), and a store built with another is reindexed when it is opened.
"""

from __future__ import annotations

import builtins
import re

# Bump when the rules below (or `memory.dedup.index_text`) change what gets indexed.
# 1: symptom + root cause as written; 2: through `match_text`; 3: without the readings.
INDEX_TEXT_VERSION = 3

# Feedback kinds as the agent names them (agent.feedback.FeedbackKind; memory does not import
# agent, tests/memory/test_matchtext.py keeps the two in step). Symptoms spell them with
# spaces, queries with underscores.
FEEDBACK_KINDS = (
    "success",
    "syntax_error",
    "runtime_error",
    "resource_error",
    "timeout",
    "check_failed",
    "critic_rejected",
)

_BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)

_KIND = "|".join(re.escape(k).replace("_", "[ _]") for k in FEEDBACK_KINDS)
# An exception class name, possibly dotted (json.decoder.JSONDecodeError).
_EXC_NAME = r"(?:[A-Za-z_]\w*\.)*(?P<name>[A-Z]\w*)"
# A source location: a file with a line number, or a traceback frame.
# The path starts where a path can (not inside a run of path characters): a match found
# from inside the run is found from its start anyway, and trying every position in a long
# run was quadratic (a 40 KB token took seconds).
_LOCATION = (
    r"""File\s+"[^"\n]*"(?:,\s*line\s+\d+)?(?:,\s*in\s+[\w<>.]+)?"""
    r"|(?<![\w./\\-])[\w./\\-]+\.pyw?:\d+(?::\d+)?"
)

_DROP_LINE = re.compile(r"^\s*(?:kind|where)\s*:", re.IGNORECASE)
_LABEL = re.compile(
    r"^\s*(?:message|failing example|in the input|issue)\s*:\s*", re.IGNORECASE | re.MULTILINE
)
_INLINE_LABEL = re.compile(r"\((?:in the input|failing example)\s*:\s*", re.IGNORECASE)
# "runtime error ValueError at solution.py:8: " at the start of a line; every part but the
# kind is optional.
_KIND_HEADER = re.compile(
    rf"^[ \t]*(?i:{_KIND})\b(?:[ \t]+{_EXC_NAME}\b)?(?:[ \t]+at[ \t]+(?:{_LOCATION}))?"
    r"[ \t]*(?::[ \t]*|(?=\()|$)",
    re.MULTILINE,
)
_EXC_PREFIX = re.compile(rf"^\s*{_EXC_NAME}\s*:\s+", re.MULTILINE)
# Likewise a match starts at the first space of a run, never inside it (same leftmost
# matches, linear time).
_AT_LOCATION = re.compile(rf"(?<!\s)(?:\s+at)?\s*(?:{_LOCATION})", re.IGNORECASE)
_LINE_NO = re.compile(
    r"(?:,|(?<![ \t]))[ \t]*\bline[ \t]+\d+\b(?:,?[ \t]*col(?:umn)?[ \t]+\d+)?"
    r"(?:[ \t]*\(char[ \t]+\d+\))?",
    re.IGNORECASE,
)
_READING = re.compile(
    r"; as numbers: (?:'[^'\n]*' is [-+]?[\d.]+(?:, )?)+(?: \([^()\n]*\))?"
    r"|; yes/no written \d+ ways: [^\n]*? mean yes; [^\n]*? mean no"
)
_EMPTY_PARENS = re.compile(r"(?<![\w)\]])\([ \t,;]*\)")
_SPACES = re.compile(r"[ \t]+")
_QUOTED = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""")
_WORD = re.compile(r"[A-Za-z]{2,}")


def _is_exception_name(name: str) -> bool:
    return name in _BUILTIN_EXCEPTIONS or name.endswith(("Error", "Exception", "Warning"))


def _says_something(rest: str) -> bool:
    """Whether a message has a word outside its quoted values ("could not convert ...")."""
    return _WORD.search(_QUOTED.sub("", rest)) is not None


def _drop_exception_prefix(match: re.Match[str]) -> str:
    name, rest = match.group("name"), match.string[match.end() :].split("\n", 1)[0]
    if not _is_exception_name(name):
        return match.group(0)
    # A bare value ("KeyError: 'qty'") keeps its type: the only word saying what happened.
    return "" if _says_something(rest) else f"{name} "


def _drop_kind_header(match: re.Match[str]) -> str:
    name = match.group("name")
    if name is not None and not _is_exception_name(name):
        # "check failed Totals: ..." is a kind followed by content, not by an exception.
        return re.sub(rf"^[ \t]*(?i:{_KIND})[ \t]*", "", match.group(0))
    rest = match.string[match.end() :].split("\n", 1)[0]
    return "" if name is None or _says_something(rest) else f"{name} "


def drop_readings(text: str) -> str:
    """`text` without the evidence's readings of its columns (the module docstring); a
    lesson's symptom is written without them (`retrospectives.facts.symptom_of`), so its
    length goes to the values."""
    return _READING.sub("", text)


def _holds(text: str, *words: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)


def match_text(text: str) -> str:
    """`text` without the structural words lesson symptoms and recall queries share.

    A text that is nothing but template comes back as it was.
    """
    lines = [line for line in text.splitlines() if not _DROP_LINE.match(line)]
    out = "\n".join(lines)
    out = _LABEL.sub("", out)
    out = _INLINE_LABEL.sub("(", out)
    out = _KIND_HEADER.sub(_drop_kind_header, out)
    out = _EXC_PREFIX.sub(_drop_exception_prefix, out)
    # The two location patterns cost 60 % of the whole (BM25 indexes every lesson through
    # here: 100k at a process's first recall), so an ASCII text without the words they need,
    # as it is by then, skips them (taking a location out can join "li" and "ne"). Not ASCII:
    # IGNORECASE also matches 'ı', 'İ', 'ſ' and the Kelvin sign to ASCII letters.
    every = not out.isascii()
    if every or _holds(out, ".py", "file"):
        out = _AT_LOCATION.sub("", out)
    if every or _holds(out, "line"):
        out = _LINE_NO.sub("", out)
    out = drop_readings(out)
    if "(" in out:
        out = _EMPTY_PARENS.sub("", out)
    cleaned = [_SPACES.sub(" ", line).strip() for line in out.splitlines()]
    result = "\n".join(line for line in cleaned if line)
    return result if result.strip() else text
