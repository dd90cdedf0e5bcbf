"""A verified code change told in one line: "replace `a` with `b`", for a lesson's fix.

A small change is shown whole, line by line, in order. A rewrite does not fit: when the
refiner rewrote a whole function, its first lines are a renamed signature and a reshuffled
loop, and the line that did the work (`float(v.replace(',', '.'))`) would hide in a
"(+15 lines)". So when not every line fits, each side shows first the lines that bring
what the other side lacks: a called function, an attribute, a keyword given to a call, a
literal, an operator, a keyword. Plain names do not count (a rename changes nothing), and
a line whose only change is its comment is no change at all.
"""

from __future__ import annotations

import ast
import functools
import io
import itertools
import keyword
import tokenize
from collections.abc import Sequence, Set
from typing import NamedTuple

from memory.redact import redact

_BARE_KEYWORDS = frozenset({"try:", "else:", "finally:", "except:", "pass"})
# Operators nearly every line has: they tell nothing about what changed.
_STRUCTURE = frozenset({",", ":", ".", ";", "=", "->", "@"})
_OPEN, _CLOSE = "([{", ")]}"
_LITERAL = "lit:"  # marks a literal's mark: '$' the string is not `$` an operator


class _Line(NamedTuple):
    file: str  # the diff's "+++ b/NAME"
    raw: str  # as written, indentation kept
    code: str  # stripped, without a trailing comment (Python files only), redacted


def diff_summary(diff: str, *, limit: int = 300) -> str:
    """A one-line account of a diff: "replace `a` with `b`", "add `c`", "rewrite 9 lines as
    `d`; (+6 lines)"; "" for no change.

    Comments, docstrings, bare string lines and bare block keywords (`try:`, `else:`) are
    skipped: the code lines that remain are the change itself. A keyword stays when it opens
    a block around moved code (a line removed and added the same at another indentation):
    "replace `x = f(v)` with `try:`; `x = f(v)`; `except ValueError:`; `continue`", where
    without `try:` the line would read as replaced by itself. Lines are kept whole, as
    many as fit in `limit` (the removed side gets about a third of it), and a side that had
    more says how many lines it left out; a lesson that shows half a statement teaches the
    model to copy half a statement. Shown lines keep their order in the diff. When neither
    side fits, the change is a rewrite and only the new side is shown. What a line brings
    is judged against the other side's lines and the diff's context lines: a diff made
    with whole-file context (`facts.failure_steps`) compares with the whole programs.
    """
    lines = _code_lines(diff)
    openers = _block_openers(lines)
    lines = [
        (sign, ln)
        for i, (sign, ln) in enumerate(lines)
        if ln.code not in _BARE_KEYWORDS or i in openers
    ]
    removed, added = _without_comment_edits(
        [ln for sign, ln in lines if sign == "-"], [ln for sign, ln in lines if sign == "+"]
    )
    if not removed and not added:
        return ""
    context = [ln.code for sign, ln in lines if sign == " "]
    old_marks = _all_marks([*removed, *context])
    new_marks = _all_marks([*added, *context])
    if not added:
        return f"remove {_whole_lines(removed, new_marks, limit)}"
    if not removed:
        return f"add {_whole_lines(added, old_marks, limit)}"
    # The removed side gets a third of the room, or its telling line whole up to half of it.
    first = max(removed, key=lambda line: _gain(_marks(line) - new_marks))
    share = min(max(limit // 3, len(first) + 2), limit // 2)
    old = _whole_lines(removed, new_marks, share)
    room = limit - len(old) - len("replace  with ")
    if len(removed) == 1 or _fits(removed, share) or _fits(added, room):
        return f"replace {old} with {_whole_lines(added, old_marks, room)}"
    # A rewrite: neither side fits. The old lines tell least; the room goes to the new.
    head = f"rewrite {_count(len(removed))} as "
    return head + _whole_lines(added, old_marks, limit - len(head))


def _count(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def _fits(lines: Sequence[str], budget: int) -> bool:
    """All of `lines`, each in backquotes, joined by "; ", fit in `budget` characters."""
    return sum(len(line) + 4 for line in lines) - 2 <= budget


def _code_lines(diff: str) -> list[tuple[str, _Line]]:
    """The diff's code lines, each with its sign ('-', '+', ' ' for context). Trailing
    comments are cut in Python files only ('#' in a .txt or .css line is text). Lines are
    redacted: they may be cut to fit, and a secret cut in half no longer matches."""
    out: list[tuple[str, _Line]] = []
    file = ""
    for ln in diff.splitlines():
        if ln.startswith("+++ "):
            file = ln[4:].removeprefix("b/")
            continue
        sign = ln[:1]
        if sign not in "-+ " or not ln or ln.startswith("--- "):
            continue
        text = ln[1:].strip()
        if not _is_code(text):
            continue
        python = file.endswith(".py") or file in ("", "b")  # "b": a reply without files
        code = _code(text) if python else text
        out.append((sign, _Line(file, redact(ln[1:].rstrip()), redact(code))))
    return out


def _without_comment_edits(removed: list[_Line], added: list[_Line]) -> tuple[list[str], list[str]]:
    """Both sides' code, without the pairs (in one file, at one indentation) that differ
    only in a comment. A line removed and added exactly as it was stays: it moved, and a
    move can be the fix (a sum taken out of its loop)."""
    new = list(added)
    old: list[str] = []
    for line in removed:
        edit = next(
            (
                j
                for j, other in enumerate(new)
                if other.file == line.file
                and other.code == line.code
                and other.raw != line.raw
                and _indent(other.raw) == _indent(line.raw)
            ),
            None,
        )
        if edit is None:
            old.append(line.code)
        else:
            del new[edit]
    return old, [line.code for line in new]


def _block_openers(lines: Sequence[tuple[str, _Line]]) -> set[int]:
    """The bare keywords (`try:`) that open a block around moved code: the next code line is
    on the same side, deeper, and was removed or added the same at another indentation."""
    sides: dict[str, set[tuple[str, str, int]]] = {"-": set(), "+": set()}
    for sign, ln in lines:
        if sign in sides and ln.code not in _BARE_KEYWORDS:
            sides[sign].add((ln.file, ln.code, _indent(ln.raw)))

    def moved(sign: str, ln: _Line) -> bool:
        other = sides["+" if sign == "-" else "-"]
        return any(
            (file, code) == (ln.file, ln.code) and indent != _indent(ln.raw)
            for file, code, indent in other
        )

    return {
        i
        for i, ((sign, ln), (after, nxt)) in enumerate(itertools.pairwise(lines))
        if sign in sides
        and ln.code in _BARE_KEYWORDS
        and after == sign
        and nxt.code not in _BARE_KEYWORDS
        and _indent(nxt.raw) > _indent(ln.raw)
        and moved(sign, nxt)
    }


def _indent(raw: str) -> int:
    return len(raw) - len(raw.lstrip())


def _whole_lines(lines: Sequence[str], other: set[str], budget: int) -> str:
    """`a`; `b` for as many of `lines` as fit in `budget`, then "(+N lines)"; at least one.

    When not all fit, lines are taken by what they bring that `other` and the lines already
    taken lack (a greedy cover, `_gain`); a line that brings nothing new is only counted
    (the first line stands in when none brings anything). Shown in their order.
    """
    if not lines:
        return ""
    pieces = [f"`{line}`" for line in lines]
    if _fits(lines, budget):
        return "; ".join(pieces)
    more = len(f"; (+{_count(len(lines))})")
    marks = [_marks(line) for line in lines]
    seen = set(other)
    chosen: list[int] = []
    used = 0
    left = set(range(len(lines)))
    while left:
        gain = {i: _gain(marks[i] - seen) for i in left}  # again after each pick
        best = None
        for i in sorted(left, key=lambda j: (-gain[j], j)):
            if chosen and not gain[i]:
                break  # nothing left brings anything new
            if chosen and used + len(pieces[i]) + 2 > budget - more:
                left.discard(i)  # it will not fit later either: the room only shrinks
                continue
            best = i
            break
        if best is None:
            break
        left.discard(best)
        if len(pieces[best]) > budget - more:  # the first line, longer than the room: cut
            pieces[best] = f"`{lines[best][: max(budget - more - 5, 20)]}...`"
        chosen.append(best)
        used += len(pieces[best]) + 2
        seen |= marks[best]
    rest = len(lines) - len(chosen)
    shown = "; ".join(pieces[i] for i in sorted(chosen))
    return shown + (f"; (+{_count(rest)})" if rest else "")


def _all_marks(lines: Sequence[str]) -> set[str]:
    return set().union(*(_marks(line) for line in lines)) if lines else set()


def _gain(marks: Set[str]) -> int:
    """How much `marks` tell: a literal most (the data's own '$', ',', 'utf-8-sig', 100 are
    what a trap is about), then a call, an attribute or a keyword argument, then an
    operator or a keyword."""
    return sum(
        3 if m.startswith(_LITERAL) else 2 if m[0] == "." or m[-1] == "(" or "(" in m else 1
        for m in marks
    )


@functools.lru_cache(maxsize=4096)
def _marks(line: str) -> frozenset[str]:
    """What a line does, as comparable marks: `float(`, `.replace`, `dump(indent=`, `','`,
    `+=`, `not`. Names the program chose itself (variables, parameters) are left out."""
    toks = [
        t
        for t in _tokens(line)
        if t.type in (tokenize.NAME, tokenize.OP, tokenize.STRING, tokenize.NUMBER)
    ]
    marks: set[str] = set()
    callees: list[str] = []  # the function each open bracket belongs to ('' for none)
    for i, tok in enumerate(toks):
        prev = toks[i - 1] if i else None
        after = toks[i + 1].string if i + 1 < len(toks) else ""
        called = (
            tok.string == "("
            and prev is not None
            and prev.type == tokenize.NAME
            and (i < 2 or toks[i - 2].string not in ("def", "class"))  # a definition's name
        )
        if tok.type == tokenize.OP and tok.string in _OPEN:
            callees.append(prev.string if called and prev is not None else "")
            method = i >= 2 and toks[i - 2].string == "."  # `.replace` says it already
            if called and prev is not None and not keyword.iskeyword(prev.string) and not method:
                marks.add(prev.string + "(")
        elif tok.type == tokenize.OP and tok.string in _CLOSE:
            if callees:
                callees.pop()
        elif tok.type == tokenize.OP:
            if tok.string not in _STRUCTURE:
                marks.add(tok.string)
        elif tok.type in (tokenize.STRING, tokenize.NUMBER):
            marks.add(_LITERAL + _literal(tok.string))
        elif keyword.iskeyword(tok.string):
            marks.add(tok.string)
        elif prev is not None and prev.string == ".":
            marks.add("." + tok.string)
        elif after == "=" and callees and callees[-1]:
            marks.add(f"{callees[-1]}({tok.string}=")
    return frozenset(marks)


def _literal(text: str) -> str:
    """A literal in one spelling: 'r' and "r" are the same string."""
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text  # an f-string, or a string cut off mid-line


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    """The tokens of one line, as far as it tokenizes: a diff line is often a fragment
    (an open bracket, half a triple-quoted string)."""
    out: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            out.append(tok)
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def _code(line: str) -> str:
    """`line` without a trailing comment ('#' inside a string is not one)."""
    if "#" not in line:
        return line
    for tok in _tokens(line):
        if tok.type == tokenize.ERRORTOKEN and not tok.string.isspace():
            return line  # not Python as far as the '#': keep it whole
        if tok.type == tokenize.COMMENT:
            return line[: tok.start[1]].rstrip()
    return line


def _is_code(line: str) -> bool:
    """Not blank, a comment, or a line that is nothing but a string (a docstring's).

    A dict entry such as `"total": sum(...),` starts with a string and is code.
    """
    if not line or line.startswith("#") or line.startswith(('"""', "'''")):
        return False
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return True  # a fragment of a statement: code
    only = tree.body[0] if len(tree.body) == 1 else None
    return not (
        isinstance(only, ast.Expr)
        and isinstance(only.value, ast.Constant)
        and isinstance(only.value.value, str | bytes)
    )
