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
3. each line the change added or rewrote that is left is deleted on its own (a debug print
   next to the fix in one hunk).

Every variant must parse as Python (files ending in .py) and differ from what was checked
before; at most `budget` variants are checked. The run's answer stays the candidate that
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
    state = _State(dict(after), passes, budget, seen={_key(after)})
    for name in sorted(after):
        if name.endswith(".py"):
            old_handlers = _handlers(before.get(name, ""))
            # After an unwrap the lines move: look for the next added `try` again.
            while any(
                state.attempt(f"try/except in {name}", {**state.files, name: source})
                for source in _added_tries(state.files[name], old_handlers)
            ):
                pass
    for name in sorted(after):
        old = before.get(name, "").splitlines(keepends=True)
        new = state.files[name].splitlines(keepends=True)
        hunks = [
            op for op in difflib.SequenceMatcher(None, old, new).get_opcodes() if op[0] != "equal"
        ]
        # From the end: reverting a hunk leaves the positions of the ones before it alone.
        for tag, i1, i2, j1, j2 in reversed(hunks):
            lines = state.files[name].splitlines(keepends=True)
            reverted = "".join(lines[:j1] + old[i1:i2] + lines[j2:])
            state.attempt(f"{tag} at line {j1 + 1} of {name}", {**state.files, name: reverted})
    for name in sorted(after):
        old = before.get(name, "").splitlines(keepends=True)
        new = state.files[name].splitlines(keepends=True)
        added = [
            j
            for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes()
            if tag != "equal"
            for j in range(j1, j2)
            if new[j].strip()
        ]
        for j in reversed(added):  # from the end, as above
            lines = state.files[name].splitlines(keepends=True)
            dropped = "".join(lines[:j] + lines[j + 1 :])
            state.attempt(f"line {j + 1} of {name}", {**state.files, name: dropped})
    return Reduction(state.files, tuple(state.taken), state.checks)


@dataclass
class _State:
    files: Files
    passes: Passes
    budget: int
    seen: set[tuple[tuple[str, str], ...]]
    taken: list[str] = field(default_factory=list)
    checks: int = 0

    def attempt(self, label: str, variant: Files) -> bool:
        """Check `variant` (within the budget, once, if it parses); keep it if it passes."""
        key = _key(variant)
        if self.checks >= self.budget or key in self.seen or not _parses(variant):
            return False
        self.seen.add(key)
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
        if first.lineno == node.lineno or last.end_lineno is None or node.end_lineno is None:
            continue  # `try: x` on one line: no block to lift out
        body = "".join(lines[first.lineno - 1 : last.end_lineno])
        indent = lines[node.lineno - 1][: node.col_offset]
        lifted = textwrap.indent(textwrap.dedent(body), indent)
        unwrapped = "".join(lines[: node.lineno - 1]) + lifted + "".join(lines[node.end_lineno :])
        yield unwrapped


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
