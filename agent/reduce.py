"""The verified change, reduced: what of a passing candidate's change the pass needed.

A refinement that passes often carries more than the fix: a `try` that prints and skips a
row, a debug print, a rewritten line beside the one that mattered. A lesson that holds all of
it teaches the next task the extras too. Measured in the demo: task A passed with
`.replace('$', '')` inside `try: ... except ValueError: print(...); continue`; task B copied
the handler, which skipped every '€' amount and wrote zeros where a crash would have shown
the trap. So once a run has passed, the parts of the change are taken back one at a time,
and each removal the task's check still passes without is kept:

1. a `try` statement the change added is replaced by its body (its handlers were not
   needed: no row raised);
2. each hunk of the change (a run of changed lines, per file) is reverted to the failing
   candidate's lines;
3. each statement the change added or rewrote that is left is dropped on its own, and each
   `else` branch it added (a debug print next to the fix in one hunk; `else: print(...)`
   after the guard that fixed it), from the end.

Only Python files (names ending in .py) that the failing candidate had are reduced: data
or text outputs are the answer itself. Every variant must parse, must differ from what was
checked before and from the failing candidate, and may not change a body while lifting it
out of a `try` (a multi-line string's contents); a variant that is the same program (a
comment, blank lines) is kept without a check. At most `budget` variants are checked, each
costing one run of the task's check. The run's answer stays the candidate that
passed: the reduced one is what the retrospective shows as the verified change.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

Files = dict[str, str]
Passes = Callable[[Mapping[str, str]], bool]


@dataclass(frozen=True)
class Reduction:
    """The passing files with the unneeded parts of the change taken back."""

    files: Files
    taken_back: tuple[str, ...]  # what was taken back, e.g. "try/except in solution.py"
    checks: int  # variants checked


def reduce_change(before: Mapping[str, str], after: Mapping[str, str], passes: Passes,
                  *, budget: int = 8) -> Reduction:  # fmt: skip
    """`after` (which passed) with each part of its change from `before` that `passes` does
    not need taken back; see the module docstring."""
    # Code the failing candidate had; data or text outputs are the answer, not code to reduce.
    names = [name for name in sorted(after) if name.endswith(".py") and name in before]
    # The failing candidate's code is no variant worth a check.
    failing = {name: before[name] for name in names}
    state = _State(dict(after), passes, budget, seen={_key(after)}, failing=failing)
    for name in names:
        old_handlers = _handlers(before[name])
        # After an unwrap the lines move: look for the next added `try` again.
        while any(
            state.attempt(f"try/except in {name}", {**state.files, name: source})
            for source in _added_tries(state.files[name], old_handlers)
        ):
            pass
    for name in names:
        old = before[name].splitlines(keepends=True)
        new = state.files[name].splitlines(keepends=True)
        hunks = [
            op for op in difflib.SequenceMatcher(None, old, new).get_opcodes() if op[0] != "equal"
        ]
        # From the end: reverting a hunk leaves the positions of the ones before it alone.
        for tag, i1, i2, j1, j2 in reversed(hunks):
            lines = state.files[name].splitlines(keepends=True)
            reverted = "".join(lines[:j1] + old[i1:i2] + lines[j2:])
            state.attempt(f"{tag} at line {j1 + 1} of {name}", {**state.files, name: reverted})
    for name in names:
        old = before[name].splitlines(keepends=True)
        # After a drop the lines move: look for the next added statement again.
        while any(
            state.attempt(f"{label} of {name}", {**state.files, name: source})
            for label, source in _added_statements(old, state.files[name])
        ):
            pass
    return Reduction(state.files, tuple(state.taken), state.checks)


@dataclass
class _State:
    files: Files
    passes: Passes
    budget: int
    seen: set[tuple[tuple[str, str], ...]]
    failing: Files
    taken: list[str] = field(default_factory=list)
    checks: int = 0

    def attempt(self, label: str, variant: Files) -> bool:
        """Check `variant` (within the budget, once, if it parses); keep it if it passes. A
        variant that is the same program as the current one (a comment, blank lines) is kept
        without a check and without a label."""
        key = _key(variant)
        if key in self.seen or not _parses(variant):
            return False
        if all(variant[name] == code for name, code in self.failing.items()):
            return False
        self.seen.add(key)
        if _same_program(variant, self.files):
            self.files = variant
            return True
        if self.checks >= self.budget:
            return False
        self.checks += 1
        if not self.passes(variant):
            return False
        self.files = variant
        self.taken.append(label)
        return True


def _handlers(source: str) -> set[str]:
    """The except clauses of `source`, normalised (what the failing candidate already had)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        ast.unparse(h)
        for node in ast.walk(tree)
        if isinstance(node, ast.Try)
        for h in node.handlers
    }


def _added_tries(source: str, old_handlers: set[str]) -> Iterator[str]:
    """`source` with one `try` unwrapped, for each plain try/except whose handlers are not
    all in the failing candidate, outermost first."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    lines = source.splitlines(keepends=True)
    tries = [n for n in ast.walk(tree) if isinstance(n, ast.Try)]
    tries.sort(key=lambda n: n.lineno)
    for node in tries:
        if node.orelse or node.finalbody or not node.handlers:
            continue
        if all(ast.unparse(h) in old_handlers for h in node.handlers):
            continue
        first, last = node.body[0], node.body[-1]
        start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
        if start == node.lineno or last.end_lineno is None or node.end_lineno is None:
            continue  # `try: x` on one line: no block to lift out
        body = "".join(lines[start - 1 : last.end_lineno])
        if not _same_body(body, node.body):
            continue  # re-indenting would change it (a multi-line string's contents)
        indent = lines[node.lineno - 1][: node.col_offset]
        lifted = textwrap.indent(textwrap.dedent(body), indent)
        unwrapped = "".join(lines[: node.lineno - 1]) + lifted + "".join(lines[node.end_lineno :])
        yield unwrapped


def _added_statements(old: list[str], source: str) -> Iterator[tuple[str, str]]:
    """(label, `source` without it) for each statement and `else` branch all of whose lines
    the change added or rewrote, from the end (dropping a later one leaves the earlier
    ones' lines where they were)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    new = source.splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, old, new).get_opcodes()
    added = {j for tag, _, _, j1, j2 in opcodes if tag != "equal" for j in range(j1, j2)}
    spans: list[tuple[int, int, str]] = []  # 0-based first line, end (exclusive), label
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.end_lineno is not None:
            spans.append((node.lineno - 1, node.end_lineno, f"line {node.lineno}"))
        orelse = getattr(node, "orelse", None)
        if isinstance(node, ast.If | ast.For | ast.While) and orelse:
            end = orelse[-1].end_lineno
            head = orelse[0].lineno - 2  # the `else:` line, when it stands alone
            if end is not None and head >= 0 and new[head].strip() == "else:":
                spans.append((head, end, f"else at line {head + 1}"))
    for first, end, label in sorted(spans, reverse=True):
        if all(j in added or not new[j].strip() for j in range(first, end)):
            yield label, "".join(new[:first] + new[end:])


def _same_body(body: str, statements: list[ast.stmt]) -> bool:
    try:
        lifted = ast.parse(textwrap.dedent(body))
    except SyntaxError:
        return False
    return ast.dump(lifted) == ast.dump(ast.Module(body=statements, type_ignores=[]))


def _same_program(a: Files, b: Files) -> bool:
    if a.keys() != b.keys():
        return False
    for name in a:
        if a[name] == b[name]:
            continue
        if not name.endswith(".py"):
            return False
        try:
            if ast.dump(ast.parse(a[name])) != ast.dump(ast.parse(b[name])):
                return False
        except SyntaxError:
            return False
    return True


def _parses(files: Mapping[str, str]) -> bool:
    for name, source in files.items():
        if name.endswith(".py"):
            try:
                ast.parse(source)
            except SyntaxError:
                return False
    return True


def _key(files: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(files.items()))
