"""The examples in a HumanEval prompt's docstring that the visible check can run.

`parse_examples` reads the entry point's docstring: doctest blocks (`>>> f(x)` with the
expected output below), else the informal forms (`f(x) ==> y`, `f(x) returns y`, `For x,
the output should be y`, `Input: ... Output: ...`). Only calls on literal arguments with a
literal result are kept; anything else is dropped rather than guessed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """One docstring example: a Python expression and the literal it should evaluate to."""

    call: str
    expected: str


_SEPARATOR = re.compile(r"^\s*#?\s*(?:==>|=>|➞|->|==|=|should\s+return|returns?|should\s+be|is)\s*")
_FOR_OUTPUT = re.compile(
    r"^\s*For\s+(.+?)\s*,?\s+the\s+(?:output|result)\s+should\s+be\s+(.+)$", re.IGNORECASE
)
_HEADING = re.compile(r"^\s*(?:for\s+)?examples?\s*:?\s*$", re.IGNORECASE)
_INPUT = re.compile(r"^\s*Input\s*:\s*(.+)$", re.IGNORECASE)
_OUTPUT = re.compile(r"^\s*Output\s*:\s*(.+)$", re.IGNORECASE)


def parse_examples(prompt: str, entry_point: str) -> tuple[Example, ...]:
    """The examples in the entry point's docstring that can be checked mechanically.

    Doctest blocks come first; the informal forms only where a docstring has no doctest.
    An example that is not a call on literal arguments with a literal result (`is_happy(a)`)
    is dropped rather than guessed.
    """
    doc = _docstring(prompt, entry_point)
    if not doc:
        return ()
    examples = _doctests(doc)
    if not examples:
        lines = _after_last_heading(doc.splitlines())
        examples = _informal(lines, entry_point) + _for_output(lines, entry_point)
        examples = examples or _input_output(lines, entry_point)
    return tuple(dict.fromkeys(examples))  # an example repeated in the docstring counts once


def _docstring(prompt: str, entry_point: str) -> str:
    for node in ast.walk(ast.parse(prompt)):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return ast.get_docstring(node, clean=True) or ""
    return ""


def _after_last_heading(lines: list[str]) -> list[str]:
    # Informal docstrings may state a recurrence before the examples ("tri(1) = 3" where
    # tri returns a list); the examples are what follows the last "Example(s)" heading.
    heads = [i for i, line in enumerate(lines) if _HEADING.match(line)]
    return lines[heads[-1] + 1 :] if heads else lines


def _doctests(doc: str) -> list[Example]:
    lines, examples, i = doc.splitlines(), [], 0
    while i < len(lines):
        stripped = lines[i].strip()
        i += 1
        if not stripped.startswith(">>>"):
            continue
        source = stripped[3:].strip()
        while i < len(lines) and lines[i].strip().startswith("..."):
            source += "\n" + lines[i].strip()[3:].strip()
            i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(">>>"):
            expected.append(lines[i].strip())
            i += 1
        example = _doctest_example(source, "\n".join(expected))
        if example is not None:
            examples.append(example)
    return examples


def _doctest_example(source: str, expected: str) -> Example | None:
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if not expected:
        # `>>> f(x) == y` with no output line is an assertion; a bare call printed nothing,
        # which in doctest means it returned None.
        if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], ast.Eq):
            return _example(ast.unparse(tree.left), ast.unparse(tree.comparators[0]))
        expected = "None"
    return _example(source, expected)


def _informal(lines: Sequence[str], entry_point: str) -> list[Example]:
    """`f(x) ==> y`, `f(x) ➞ y`, `f(x) # returns y`, `f(x) = y` and similar lines."""
    examples: list[Example] = []
    for line in lines:
        start = line.find(entry_point + "(")
        end = _closing_paren(line, start + len(entry_point)) if start >= 0 else None
        match = _SEPARATOR.match(line[end + 1 :]) if end is not None else None
        if end is None or match is None:
            continue
        expected = _leading_literal(line[end + 1 + match.end() :])
        example = _example(line[start : end + 1], expected) if expected else None
        if example is not None:
            examples.append(example)
    return examples


def _for_output(lines: Sequence[str], entry_point: str) -> list[Example]:
    """`For lst = [1, 2] the output should be 3` (the arguments by name)."""
    examples: list[Example] = []
    for line in lines:
        match = _FOR_OUTPUT.match(line)
        expected = _leading_literal(match.group(2)) if match else None
        if match is None or expected is None:
            continue
        # "For N = 150, the sum of digits will be 6 the output ..." has prose after the args.
        for args in (match.group(1), match.group(1).split(", the")[0]):
            example = _example(f"{entry_point}({args})", expected)
            if example is not None:
                examples.append(example)
                break
    return examples


def _input_output(lines: Sequence[str], entry_point: str) -> list[Example]:
    """`Input: arr = [1, 2], k = 3` followed by `Output: 5` (keyword or positional)."""
    examples: list[Example] = []
    pending: str | None = None
    for line in lines:
        if (m := _INPUT.match(line)) is not None:
            pending = m.group(1).strip()
        elif (m := _OUTPUT.match(line)) is not None and pending is not None:
            expected = _leading_literal(m.group(1))
            example = _example(f"{entry_point}({pending})", expected) if expected else None
            if example is not None:
                examples.append(example)
            pending = None
    return examples


def _leading_literal(text: str) -> str | None:
    """The Python literal a line of prose starts with: `'No' (the name ...)` gives `'No'`.

    "-> 19 - 5 - 6 = 8" (the working, then the value) gives 8; a bare true/false gives
    True/False.
    """
    text = text.strip()
    tries = [text, text.rsplit("=", 1)[-1]]
    tries += [text[:i] for i in range(len(text) - 1, 0, -1) if text[i] in " #(,"]
    for raw in tries:
        candidate = raw.strip().rstrip(".").strip()
        candidate = {"true": "True", "false": "False"}.get(candidate, candidate)
        if _literal(candidate) is not None:
            return candidate
    return None


def _closing_paren(line: str, open_at: int) -> int | None:
    depth, quote = 0, ""
    for i in range(open_at, len(line)):
        ch = line[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _literal(text: str) -> str | None:
    """`text` normalised (comments dropped) if it is a Python literal, else None."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        value = ast.literal_eval(tree)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    source = ast.unparse(tree)
    if text.strip().startswith("(") and not isinstance(value, tuple):
        # `bf(...) ==> ("Venus")` means a one-element tuple, which Python spells ("Venus",).
        source = f"({source},)"
    return source


def _example(call: str, expected: str) -> Example | None:
    """An Example if `call` calls functions on literals only and `expected` is a literal."""
    try:
        tree = ast.parse(call.strip(), mode="eval")
    except SyntaxError:
        return None
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # A bare name as an argument (`is_happy(a)`) is prose, not Python; we would only guess.
    loose = any(isinstance(n, ast.Name) and id(n) not in called for n in ast.walk(tree))
    value = _literal(expected)
    if not isinstance(tree.body, ast.Call) or loose or value is None:
        return None
    return Example(call=ast.unparse(tree), expected=value)
