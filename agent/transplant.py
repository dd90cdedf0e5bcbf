"""The fix of one failure: the expression of the failing line as the passing program wrote it.

A pass often fixes more than the failure a lesson is about. On the 1.5B a refinement that
passed rewrote the whole function: it read '2,31' as `float(row['value'].replace(',', '.'))`
where the failing program crashed on `value = float(row['value'])`, and it also fixed an
average and a bad `open(..., indent=4)`. The reduced change (`agent.reduce`) keeps all of
that, since the pass needed it, and the lesson showed a 16-line rewrite in which the fix of
the crash is one line among many. The next task has its own averages; what transfers is the
expression that got past the crash.

So for the failing candidate's line that raised (its `Feedback.location`), each expression
on it is looked for in the passing program, written there with more to it: the same value
taken further by attributes, calls and subscripts (`row['litres']` as
`row['litres'].replace(',', '.')`, which the pass assigned back before using it), or a call
of the same function whose arguments are the failing one's, each as it was or taken
further, with more after them (`float(row['value'])` as
`float(row['value'].replace(',', '.'))`; `open(path)` as `open(path,
encoding='utf-8-sig')`). A comparison or a conditional on the value is another computation,
not the same one taken further. Each such expression put in its place (the line's largest
expressions first, then the fewest added tokens) is a variant of the failing program that
differs in that line only. The first variant that gets past that line under the task's check
(it passes, runs through to a failed check, or raises on another line; not a timeout or a
limit) is the failure's fix: checked, as the pass was, and as small as a change gets. None
when no expression of the pass extends one of the failing line (a rewrite that renamed
everything, a fix elsewhere in the program): the lesson then keeps the reduced change.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Callable, Iterator, Mapping

from agent.feedback import Feedback

Files = dict[str, str]
Judge = Callable[[Mapping[str, str]], Feedback]


def failure_fix(before: Mapping[str, str], after: Mapping[str, str], failure: Feedback,
                judge: Judge, *, budget: int = 4) -> Files | None:  # fmt: skip
    """`before` with one expression of its failing line as `after` writes it, the first such
    variant `judge` (the task's check) finds past the failure; see the module docstring. At
    most `budget` variants are judged."""
    if failure.kind != "runtime_error" or not failure.location:
        return None
    name, _, line_no = failure.location.rpartition(":")
    if not name.endswith(".py") or name not in before or name not in after:
        return None
    try:
        line = int(line_no)
    except ValueError:
        return None
    for source in _variants(before[name], after[name], line)[:budget]:
        variant = {**before, name: source}
        verdict = judge(variant)
        if _past(verdict, failure):
            return variant
    return None


def _past(verdict: Feedback, failure: Feedback) -> bool:
    """The program got past the failing line: it passed, ran through to a failed check, or
    raised on another line. Another exception on the same line (a NameError from a helper
    only the pass had) is no way past it; a timeout or a limit says nothing of where the
    program got."""
    if verdict.passed or verdict.kind == "check_failed":
        return True
    return verdict.kind == "runtime_error" and verdict.location not in (None, failure.location)


def _variants(old: str, new: str, line: int) -> list[str]:
    """`old` with one single-line expression on `line` replaced by an expression of `new`
    that extends it: the largest expressions of the line first (the more of the failing
    computation a source holds, the surer it is the pass's version of it), then the fewest
    added tokens. Each parses and differs from `old`; an expression the line already holds
    brings nothing new."""
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return []
    # Lines as `ast` counts them: '\u2028' or '\x0c' in a string ends no line there.
    lines = io.StringIO(old, newline="").readlines()
    if not 0 < line <= len(lines):
        return []
    targets = [e for e in _expressions(old_tree) if e.lineno == line]
    # A called function is no value (`row['v'].replace` of `row['v'].replace(',', '.')`).
    called = {id(n.func) for n in ast.walk(new_tree) if isinstance(n, ast.Call)}
    sources = {_text(e, new): e for e in _expressions(new_tree) if id(e) not in called}
    found: dict[str, tuple[int, int]] = {}
    for target in targets:
        was = len(_tokens(_text(target, old)))
        for text, source in sources.items():
            if text in lines[line - 1] or not _extends(target, source):
                continue
            # Offsets count UTF-8 bytes: a '€' before the expression is three of them.
            row = lines[line - 1].encode()
            start, end = target.col_offset, target.end_col_offset or target.col_offset
            try:
                variant_row = (row[:start] + text.encode() + row[end:]).decode()
            except UnicodeDecodeError:  # offsets that are not this line's: no variant
                continue
            variant = "".join([*lines[: line - 1], variant_row, *lines[line:]])
            if variant != old and _parses(variant):
                order = (-was, len(_tokens(text)) - was)
                found[variant] = min(order, found.get(variant, order))
    return sorted(found, key=lambda v: found[v])


def _expressions(tree: ast.AST) -> Iterator[ast.expr]:
    """Every expression written on one line (a multi-line one would not fit a line)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and node.end_lineno == node.lineno:
            yield node


def _text(node: ast.expr, source: str) -> str:
    return ast.get_source_segment(source, node) or ""


def _extends(target: ast.expr, source: ast.expr) -> bool:
    """`source` is `target` with more to it: the same value taken further
    (`row['v'].replace(',', '.')` for `row['v']`: attributes, calls, subscripts on it), or
    a call of the same function whose arguments are the target's, each as it was or taken
    further, with more after them (`open(path)` as `open(path, encoding='utf-8-sig')`).
    Either way the source is a primary expression: it takes the target's place without a
    question of precedence. A bare name or constant is too common to stand for what the
    pass changed; a comparison or a conditional on the value is another computation."""
    if isinstance(target, ast.Name | ast.Constant) or _same(target, source):
        return False
    if _taken_further(target, source):
        return True
    if not (isinstance(target, ast.Call) and isinstance(source, ast.Call)):
        return False
    if not _same(target.func, source.func) or len(source.args) < len(target.args):
        return False
    given = {k.arg: k.value for k in source.keywords}
    return all(
        _same(a, b) or _taken_further(a, b) for a, b in zip(target.args, source.args, strict=False)
    ) and all(
        k.arg in given and (_same(k.value, given[k.arg]) or _taken_further(k.value, given[k.arg]))
        for k in target.keywords
    )


def _taken_further(target: ast.expr, source: ast.expr) -> bool:
    """`source` is a chain of attributes, calls and subscripts on `target` itself."""
    node: ast.expr = source
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
        if _same(node, target):
            return True
    return False


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _tokens(text: str) -> list[str]:
    try:
        return [
            t.string
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)
            and t.string.strip()
        ]
    except (tokenize.TokenError, SyntaxError):
        return []


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True
