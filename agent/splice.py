"""A repair that returns only the functions it changed is spliced into the program it repairs.

Small models asked to "give the complete file again" often answer with just the function
they fixed. Checked as it is, that fragment defines functions and runs nothing: the check
reports a missing output, the fix itself is never tested, and the round is lost. When a
repaired Python file holds only imports, functions and classes, while the program it repairs
also has top-level code (its main part), and the two share a function or class name, the
fragment is a patch: each of its definitions replaces the one of the same name, new
definitions go in before the main part, and new imports go to the top.

Anything else (a full program, a file that does not parse, a fragment sharing no name with
the previous program, a non-Python file) is kept exactly as the model wrote it.
"""

from __future__ import annotations

import ast

from agent.candidate import Candidate

_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORT = (ast.Import, ast.ImportFrom)


def splice_repair(previous: Candidate, repaired: Candidate) -> Candidate:
    """`repaired` with every fragment file completed from `previous` (see module docstring)."""
    files = dict(repaired.files)
    changed = False
    for name, code in repaired.files.items():
        before = previous.files.get(name)
        if not name.endswith(".py") or before is None:
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
    old_defs = {n.name: n for n in old.body if isinstance(n, _DEFINITION)}
    new_defs = [n for n in new.body if isinstance(n, _DEFINITION)]
    if not any(n.name in old_defs for n in new_defs):
        return None
    lines = program.splitlines()
    frag_lines = fragment.splitlines()
    # Replace from the bottom up, so earlier line numbers stay valid.
    replacements = sorted(
        ((old_defs[n.name], n) for n in new_defs if n.name in old_defs),
        key=lambda pair: pair[0].lineno,
        reverse=True,
    )
    for target, source in replacements:
        lines[_start(target) - 1 : _end(target)] = _text(frag_lines, source)
    added = [line for n in new_defs if n.name not in old_defs for line in _text(frag_lines, n)]
    if added:
        main = _first_statement(ast.parse("\n".join(lines)))
        at = _start(main) - 1 if main is not None else len(lines)
        lines[at:at] = [*added, "", ""]
    known = {ast.unparse(n) for n in old.body if isinstance(n, _IMPORT)}
    imports = [
        ast.unparse(n) for n in new.body if isinstance(n, _IMPORT) and ast.unparse(n) not in known
    ]
    return "\n".join([*imports, *lines]) + "\n"


def _is_fragment(module: ast.Module) -> bool:
    """Only imports, definitions and a docstring: a module that runs nothing by itself."""
    return all(isinstance(n, (*_IMPORT, *_DEFINITION)) or _is_docstring(n) for n in module.body)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _first_statement(module: ast.Module) -> ast.stmt | None:
    """The first top-level node that is code to run (the program's main part)."""
    return next(
        (
            n
            for n in module.body
            if not isinstance(n, (*_IMPORT, *_DEFINITION)) and not _is_docstring(n)
        ),
        None,
    )


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _end(node: ast.stmt) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _text(lines: list[str], node: ast.stmt) -> list[str]:
    return lines[_start(node) - 1 : _end(node)]
