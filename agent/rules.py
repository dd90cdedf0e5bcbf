"""Rule checks: the cheapest checks, run before any execution or LLM judgement."""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections.abc import Iterator, Mapping

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.task import Task

MAX_FILE_CHARS = 200_000


def rule_check(candidate: Candidate, task: Task) -> Feedback | None:
    """Return failing feedback for the first broken rule, or None when all rules hold."""
    for name in task.output:
        content = candidate.files.get(name)
        if content is None or not content.strip():
            return Feedback(
                kind="check_failed",
                stage="rule",
                summary=f"output file {name} is missing",
                key_message=(
                    f"the answer must contain {name} as a fenced code block headed by its name"
                ),
                issues=(f"{name} was not produced",),
            )
        if len(content) > MAX_FILE_CHARS:
            return Feedback(
                kind="check_failed",
                stage="rule",
                summary=f"{name} is {len(content)} characters (limit {MAX_FILE_CHARS})",
                issues=(f"{name} is too long",),
            )
        problem = _parse_problem(name, content)
        if problem is not None:
            return problem
    if not task.output and not candidate.text.strip():
        return Feedback(
            kind="check_failed", stage="rule", summary="empty answer", issues=("empty answer",)
        )
    return None


def _parse_problem(name: str, content: str) -> Feedback | None:
    if name.endswith(".py"):
        try:
            tree = ast.parse(content, filename=name)
        except SyntaxError as exc:
            line = (exc.text or "").rstrip()
            return Feedback(
                kind="syntax_error",
                stage="rule",
                summary=f"{name}:{exc.lineno}: {exc.msg}",
                error_type=type(exc).__name__,
                location=f"{name}:{exc.lineno}",
                key_message=f"{exc.msg}: {line.strip()}" if line else exc.msg,
            )
        if not tree.body:
            # Comments only: a reply whose fences went astray. It would run, write nothing,
            # and outrank a program that crashed halfway; it ranks at the rule stage instead.
            return Feedback(
                kind="check_failed",
                stage="rule",
                summary=f"{name} holds no code, only comments",
                key_message=f"{name} holds no code: put the whole program in one fenced block",
                issues=(f"{name} holds no code",),
            )
    elif name.endswith(".json"):
        try:
            json.loads(content)
        except json.JSONDecodeError as exc:
            return Feedback(
                kind="syntax_error",
                stage="rule",
                summary=f"{name}:{exc.lineno}: {exc.msg}",
                error_type="JSONDecodeError",
                location=f"{name}:{exc.lineno}",
                key_message=exc.msg,
            )
    return None


def catches(files: Mapping[str, str], error_type: str) -> bool:
    """Does a Python file catch `error_type` (by its name, a builtin base's such as ValueError
    for a UnicodeDecodeError, or bare) without raising again or reading the value another
    way? Such a handler skips or replaces what raised it. A handler that calls again what
    its `try` called, on something not constant (`strptime(text, other_format)`,
    `float(text.replace(',', '.'))`), is a second way to read it, not a skip (dates_01: told
    it skipped values while it parsed every one); `float('nan')` is a replacement. Unparsable
    files say nothing."""
    builtin = getattr(builtins, error_type, None)
    bases = {c.__name__ for c in builtin.__mro__} if isinstance(builtin, type) else set()
    caught = {error_type, "Exception", "BaseException", "", *bases}
    for _, tree in _trees(files):
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Try, ast.TryStar)):
                continue
            tried = {_called(call) for stmt in node.body for call in _used_calls(stmt)}
            for handler in node.handlers:
                if (
                    _names(handler.type) & caught
                    and not any(isinstance(n, ast.Raise) for n in ast.walk(handler))
                    and not _reads_again(handler, tried)
                ):
                    return True
    return False


def _used_calls(stmt: ast.stmt) -> list[ast.Call]:
    """The calls of a statement whose result is used: all but the outermost call of an
    expression statement (`bad.append(x)`, `print(...)`, `log(...)` are actions)."""
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call)]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        calls.remove(stmt.value)
    return calls


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "?")


def _reads_again(handler: ast.ExceptHandler, tried: set[str]) -> bool:
    """Does the handler use the result of a call its try made, on a value that is neither a
    constant (`float('nan')`, `float(DEFAULT)`) nor the exception itself?"""

    def variable(arg: ast.expr) -> bool:
        return any(
            isinstance(n, ast.Name)
            and n.id != handler.name
            and not n.id.isupper()
            and not hasattr(builtins, n.id)
            for n in ast.walk(arg)
        )

    return any(
        _called(call) in tried and any(map(variable, call.args))
        for stmt in handler.body
        for call in _used_calls(stmt)
    )


def _names(caught: ast.expr | None) -> set[str]:
    """The class names an except clause catches ("" for a bare except)."""
    if caught is None:
        return {""}
    parts = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return {p.attr if isinstance(p, ast.Attribute) else getattr(p, "id", "?") for p in parts}


def imported(files: Mapping[str, str]) -> set[str]:
    """The modules the Python files import, wherever the import is (in a function, under
    try), by their full dotted names: `import a.b` gives 'a.b', `from a.b import c` gives
    'a.b' and 'a.b.c' (c may be a module). Relative imports and unparsable files are left
    out."""
    names: set[str] = set()
    for _, tree in _trees(files):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return names


def own_modules(files: Mapping[str, str]) -> set[str]:
    """The modules the files themselves make (helpers.py -> 'helpers', pkg/__init__.py ->
    'pkg')."""
    dotted = (name.removesuffix(".py").replace("/", ".") for name in files if name.endswith(".py"))
    return {name.removesuffix(".__init__") for name in dotted}


def _trees(files: Mapping[str, str]) -> Iterator[tuple[str, ast.Module]]:
    """Each Python file's name and syntax tree; unparsable files are left out."""
    for name, content in files.items():
        if name.endswith(".py"):
            try:
                yield name, ast.parse(content)
            except (SyntaxError, ValueError):
                continue


_WRITE_MODE = re.compile(r"[rbt+]*[wax][rbt+]*")


def bom_writes(files: Mapping[str, str]) -> list[str]:
    """Where a Python file writes a file with encoding 'utf-8-sig' ("solution.py:12"), which
    puts a byte order mark at its start: an open(..., 'w', encoding='utf-8-sig') (builtin,
    codecs, io or a Path's) or a write_text(..., encoding='utf-8-sig'). Unparsable files say
    nothing."""
    found = []
    for name, tree in _trees(files):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _writes_with_bom(node):
                found.append(f"{name}:{node.lineno}")
    return found


def _writes_with_bom(call: ast.Call) -> bool:
    args = [a.value if isinstance(a, ast.Constant) else None for a in call.args]
    keywords = {k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant)}
    encodings = [keywords.get("encoding"), *args[1:]]  # codecs.open's is positional
    if not any(
        isinstance(v, str) and v.lower().replace("_", "-") == "utf-8-sig" for v in encodings
    ):
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "write_text":
        return True
    # The mode: open(path, MODE) of builtins, codecs and io; a Path's own open(MODE).
    module = getattr(func.value, "id", "") if isinstance(func, ast.Attribute) else "builtins"
    own = module not in ("builtins", "codecs", "io")
    modes = [keywords.get("mode"), *(args[:1] if own else args[1:2])]
    return name == "open" and any(isinstance(m, str) and _WRITE_MODE.fullmatch(m) for m in modes)
