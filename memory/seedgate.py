"""The seed stage's gates: a cosine floor, and the error types a seed query states.

At the seed stage (task start) the loop gives recall no error type, so recall cannot gate the
way it does at reflection (`memory.recall`: it answers only if a lesson of the query's types
passes the cut). Two gates stand in:

- the floor: the best candidate must reach `seed_gate(config)` (`min_similarity`, or
  `seed_min_similarity` when that is higher), and candidates need `candidate_cut`;
- the stated types: a seed query whose text states an error (a user asking with an error
  message, the MCP server, the CLI's `recall`, a task whose goal quotes its last failure) is
  gated on the error types it states, exactly like a reflection query: recall answers only
  if a lesson of one of those types passes the cut, then ranks lessons of every type. A
  query that states no error (a goal, the input heads, the data profile) stays ungated.

What states an error (`stated_error_types`), the forms the loop and Python write it in:

- a feedback line `kind: <kind>` or `kind: <kind> (<Exception>)` (`Feedback.compressed`,
  what the loop sends at reflection), giving the kind and the exception;
- a kind phrase opening a line and followed by an exception ("runtime error ValueError at
  solution.py:8: ...", the template of a lesson's symptom);
- an exception line as a traceback ends (`json.decoder.JSONDecodeError: Expecting value`,
  `KeyError: 'qty'`, a bare `StopIteration`), optionally after a `message:` label. A text
  that states exceptions but no kind also states the kind the loop would send beside them
  (`syntax_error` for a SyntaxError, `resource_error` for a MemoryError, else
  `runtime_error`): a lesson filed under the kind alone still opens the gate.

A docstring's `Raises` section ("Raises:" with its indented entries, or NumPy's "Raises" over
a dashed rule, up to the next blank line) states what a function is specified to raise, not a
failure: it is taken out too, so a goal that documents its errors stays ungated. (A doctest's
expected traceback is not: it reads exactly like a pasted interactive session.)

An exception is a builtin exception class or a CamelCase name ending in Error or Exception
(not the word "Error" alone); a warning is not an error. "success" states no error. A name
merely mentioned inside a sentence ("raise ValueError on a bad row") states nothing, and
neither does the query's data: the surface views (input heads, profile lines) are taken out
of the text first, so a task whose input is a log full of tracebacks is not gated on them.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.matchtext import FEEDBACK_KINDS
from memory.types import LessonQuery

if TYPE_CHECKING:
    from memory.ranking import RecallConfig

# Builtin exception classes; a warning is not an error.
_BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type)
    and issubclass(value, BaseException)
    and not issubclass(value, Warning)
)
_FAILURE_KINDS = tuple(k for k in FEEDBACK_KINDS if k != "success")
_KIND = "|".join(re.escape(k).replace("_", "[ _]") for k in _FAILURE_KINDS)
# A (possibly dotted) class name: json.decoder.JSONDecodeError -> JSONDecodeError.
_EXC = r"(?:[A-Za-z_]\w*\.)*(?P<name>[A-Z]\w*)"

_KIND_LINE = re.compile(
    rf"^[ \t]*kind[ \t]*:[ \t]*(?P<kind>{_KIND})\b(?:[ \t]*\([ \t]*{_EXC}[ \t]*\))?",
    re.IGNORECASE | re.MULTILINE,
)
_KIND_HEADER = re.compile(rf"^[ \t]*(?P<kind>(?i:{_KIND}))[ \t]+{_EXC}\b", re.MULTILINE)
_EXC_LINE = re.compile(rf"^[ \t]*(?:(?i:message)[ \t]*:[ \t]*)?{_EXC}[ \t]*(?::|$)", re.MULTILINE)
_RAISES_HEADER = re.compile(r"^[ \t]*Raises[ \t]*:?\s*$")
_RULE = re.compile(r"^[ \t]*-{3,}\s*$")
_SUFFIXES = ("Error", "Exception")
_SYNTAX = frozenset({"SyntaxError", "IndentationError", "TabError"})


def is_exception_name(name: str) -> bool:
    """A builtin exception (not a warning), or a CamelCase name ending in Error/Exception."""
    if name in _BUILTIN_EXCEPTIONS:
        return True
    return any(name.endswith(s) and len(name) > len(s) for s in _SUFFIXES)


def _kind(phrase: str) -> str:
    return re.sub(r"[ \t]+", "_", phrase.strip().lower())


def kind_of(exception: str) -> str:
    """The feedback kind an exception that ended a program gets (as `agent.classify` files
    it when the traceback alone is known)."""
    if exception in _SYNTAX:
        return "syntax_error"
    return "resource_error" if exception == "MemoryError" else "runtime_error"


def stated_error_types(text: str, surface: Sequence[str] = ()) -> tuple[str, ...]:
    """The error types `text` states (see the module docstring), in order of appearance,
    without duplicates; the content of the `surface` views does not count."""
    for view in surface:
        if view.strip():
            text = text.replace(view, "\n")
    found = _stated(_without_raises_sections(text))
    if found and not any(t in FEEDBACK_KINDS for _, t in found):
        # Exceptions alone: the kind the loop would have sent beside them.
        found += [(i, kind_of(t)) for i, t in found]
    return tuple(dict.fromkeys(t for _, t in sorted(found)))


def _without_raises_sections(text: str) -> str:
    """`text` with each docstring `Raises` section blanked (see the module docstring)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if _RAISES_HEADER.match(lines[i]) is None:
            i += 1
            continue
        indent = _indent(lines[i])
        end = i + 1
        numpy = end < len(lines) and _RULE.match(lines[end]) is not None
        end += numpy
        while end < len(lines) and lines[end].strip():
            if not numpy and _indent(lines[end]) <= indent:
                break  # Google style: the entries are indented under "Raises:"
            end += 1
        lines[i:end] = [""] * (end - i)
        i = end
    return "\n".join(lines)


def _indent(line: str) -> int:
    expanded = line.expandtabs()
    return len(expanded) - len(expanded.lstrip())


def _stated(text: str) -> list[tuple[int, str]]:
    """(position, type) of every kind and exception `text` states."""
    found: list[tuple[int, str]] = []
    for match in _KIND_LINE.finditer(text):
        found.append((match.start("kind"), _kind(match.group("kind"))))
        name = match.group("name")
        if name is not None and is_exception_name(name):
            found.append((match.start("name"), name))
    for match in _KIND_HEADER.finditer(text):
        if is_exception_name(match.group("name")):
            found.append((match.start("kind"), _kind(match.group("kind"))))
            found.append((match.start("name"), match.group("name")))
    for match in _EXC_LINE.finditer(text):
        if is_exception_name(match.group("name")):
            found.append((match.start("name"), match.group("name")))
    return found


def seed_gated(query: LessonQuery) -> bool:
    """Whether the seed stage's gates apply: a seed query that leaves the cut to the store."""
    return query.stage == "seed" and query.min_similarity is None


def gate_types(query: LessonQuery, *, stated: bool = True) -> frozenset[str]:
    """The error types recall gates on: the query's own, else (seed stage, `stated`) those
    its text states."""
    if query.error_types:
        return frozenset(query.error_types)
    if stated and seed_gated(query):
        return frozenset(stated_error_types(query.text, query.surface))
    return frozenset()


def seed_gate(config: RecallConfig) -> float:
    """The cosine the best candidate of a seed-stage query must reach."""
    return max(config.min_similarity, config.seed_min_similarity or config.min_similarity)


def candidate_cut(query: LessonQuery, config: RecallConfig) -> float:
    """The cosine a candidate needs: the query's own, the seed stage's, or the store's."""
    if query.min_similarity is not None:
        return query.min_similarity
    if seed_gated(query):
        return seed_gate(config) - config.seed_cut_margin
    return config.min_similarity


def passes_seed_gate(query: LessonQuery, best: float, config: RecallConfig) -> bool:
    """False when a seed-stage query's best candidate (cosine `best`) stays below
    `seed_gate(config)`."""
    return not seed_gated(query) or best >= seed_gate(config)


def why_nothing(query: LessonQuery, config: RecallConfig) -> str:
    """Why recall answered `query` with nothing, for a person or an assistant searching: the
    scope it looked in and the gates it applied (the floor, the error types the text states)."""
    kind = f" of type {', '.join(query.error_types)}" if query.error_types else ""
    where = f"no lesson{kind} in scope {query.scope!r}"
    where += " or 'global'" if query.include_global else ""
    if query.min_similarity is not None:
        return f"{where} has similarity >= {query.min_similarity:.2f}"
    gates = [f"the best must reach similarity {seed_gate(config):.2f}"]
    stated = gate_types(query, stated=config.seed_stated_types) - set(query.error_types)
    if stated:
        gates.append(
            f"the text states {', '.join(sorted(stated))}: "
            "a lesson of one of those types must pass that cut"
        )
    return f"{where} passed recall's gates ({'; '.join(gates)})"
