"""A repair that returns only the functions it changed is spliced into the program it repairs.

Small models asked to "give the complete file again" often answer with just the function
they fixed. Checked as it is, that fragment defines functions and runs nothing: the check
reports a missing output, the fix itself is never tested, and the round is lost. When a
repaired Python file holds only imports, functions and classes, while the program it repairs
also has top-level code (its main part), and the two share a function or class name, the
fragment is a patch: each of its definitions replaces the one of the same name, new
definitions go in before the main part, and new imports go to the top.

Only a file the task runs as a program (`python solution.py` in its run or check command) is
spliced: a module that is imported by its check (HumanEval's) is complete with functions
only. Anything else (a full program, a file that does not parse, a fragment sharing no name
with the previous program, a name defined twice in the previous program, a class that lost
some of its methods) is kept exactly as the model wrote it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

from agent.candidate import Candidate
from agent.task import Task

_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORT = (ast.Import, ast.ImportFrom)


def programs_of(task: Task) -> frozenset[str]:
    """The task's Python outputs that its run or check command runs as a program."""
    commands = f"{task.run or ''}\n{task.check or ''}"
    return frozenset(
        name
        for name in task.output
        if name.endswith(".py")
        and re.search(rf"python3?\s+(?:-\S+\s+)*[\"']?{re.escape(name)}\b", commands)
    )


def splice_repair(previous: Candidate, repaired: Candidate, programs: Collection[str]) -> Candidate:
    """`repaired` with every fragment file of `programs` completed from `previous`."""
    files = dict(repaired.files)
    changed = False
    for name, code in repaired.files.items():
        before = previous.files.get(name)
        if name not in programs or before is None:
            continue
        whole = splice(before, code)
        if whole is not None:
            files[name], changed = whole, True
    return repaired.model_copy(update={"files": files}) if changed else repaired


def splice(program: str, fragment: str) -> str | None:
    """`program` with `fragment`'s definitions and imports applied, or None if not a patch."""
    try:
        old, new = ast.parse(program), ast.parse(fragment)
    except (SyntaxError, ValueError):
        return None
    if not _is_fragment(new) or _is_fragment(old):
        return None
    old_list = [n for n in old.body if isinstance(n, _DEFINITION)]
    old_defs = {n.name: n for n in old_list}
    # The last definition of a name wins, as when Python runs the fragment.
    new_defs = list({n.name: n for n in new.body if isinstance(n, _DEFINITION)}.values())
    if len(old_defs) < len(old_list) or not any(n.name in old_defs for n in new_defs):
        return None  # a name defined twice in the program: which one is meant is unclear
    if any(_loses_members(old_defs[n.name], n) for n in new_defs if n.name in old_defs):
        return None
    lines, frag_lines = _lines(program), _lines(fragment)
    # Replace from the bottom up, so earlier line numbers stay valid.
    replacements = sorted(
        ((old_defs[n.name], n) for n in new_defs if n.name in old_defs),
        key=lambda pair: pair[0].lineno,
        reverse=True,
    )
    for target, source in replacements:
        lines[_start(target) - 1 : _end(target)] = _text(frag_lines, source)
    added = [line for n in new_defs if n.name not in old_defs for line in _text(frag_lines, n)]
    try:
        spliced = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    if added:
        # After the last definition (a base class or a helper it uses comes first), before
        # the main part when that follows the definitions.
        last = max((_end(n) for n in spliced.body if isinstance(n, _DEFINITION)), default=0)
        lines[last:last] = ["", "", *added]
    known = {ast.unparse(n) for n in old.body if isinstance(n, _IMPORT)}
    imports = [
        ast.unparse(n) for n in new.body if isinstance(n, _IMPORT) and ast.unparse(n) not in known
    ]
    if imports:
        at = _import_slot(spliced)
        lines[at:at] = imports
    return "\n".join(lines) + "\n"


def _lines(code: str) -> list[str]:
    # Python's own line ends only: str.splitlines() also splits on \x0c, \u2028 and others.
    return re.split(r"\r\n|\r|\n", code)


def _loses_members(old: ast.stmt, new: ast.stmt) -> bool:
    """A class answered with only the method that changed would drop the others."""
    if not (isinstance(old, ast.ClassDef) and isinstance(new, ast.ClassDef)):
        return False
    return not _member_names(old) <= _member_names(new)


def _member_names(cls: ast.ClassDef) -> set[str]:
    return {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _import_slot(module: ast.Module) -> int:
    """The line after the module's docstring and its leading imports (`__future__` first)."""
    at = 0
    for node in module.body:
        if not (isinstance(node, _IMPORT) or _is_docstring(node)):
            break
        at = _end(node)
    return at


def _is_fragment(module: ast.Module) -> bool:
    """Only imports, definitions and a docstring: a module that runs nothing by itself."""
    return all(isinstance(n, (*_IMPORT, *_DEFINITION)) or _is_docstring(n) for n in module.body)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _end(node: ast.stmt) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _text(lines: list[str], node: ast.stmt) -> list[str]:
    return lines[_start(node) - 1 : _end(node)]
