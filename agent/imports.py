"""Imports a program forgot, added before it is checked.

A small model often writes `datetime.strptime(...)`, `Counter(words)` or `math.sqrt(x)`
and leaves out the import. The check then reports a NameError, and the round that follows
is spent on one line while the task's real problem waits (measured on the 1.5B: dates_04's
first round crashed on `name 'datetime' is not defined`, its second on `module 'datetime'
has no attribute 'strptime'`, and only the third met the dates). So every Python file of a
candidate is read before it is checked: a name it loads but binds nowhere (no assignment,
definition, argument, import or `global`), that is not a builtin, gets its import when that
import is certain:

- one of the `MODULES` used only as `name.attr`, every attribute the module's:
  `import name`; when the attributes are those of its same-named member instead
  (`datetime.strptime`, `bisect(xs, x)`), `from datetime import datetime`; else nothing
  (`numbers.append(x)` is a list the program forgot to make, not the `numbers` module);
- one of the `FROM` names (`Counter`, `defaultdict`, `reduce`, `sqrt`, `Decimal`, `Path`,
  `mean`, `List`): `from module import name`.

Anything else (a name several modules export, a third-party module such as `np`, a file
that does not parse or does `from x import *`) is left as the model wrote it: the check
reports it as before. The imports go after the module docstring and `__future__` imports.
The reply text keeps the model's words; the files are what is checked.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from functools import cache

from agent.candidate import Candidate

# Modules a program uses by name (`json.dump`): imported here to know their attributes.
MODULES = (
    "array", "base64", "bisect", "calendar", "collections", "copy", "csv", "datetime",
    "decimal", "fractions", "functools", "glob", "hashlib", "heapq", "io", "itertools",
    "json", "math", "operator", "os", "pathlib", "random", "re", "shutil", "statistics",
    "string", "sys", "textwrap", "time", "typing", "uuid", "zoneinfo",
)  # fmt: skip
# Names a program uses bare (`Counter(words)`) that mean one thing: `from module import
# name`. A list, not every export: `count`, `product`, `merge` or `mode` called but never
# defined are as likely the program's own missing helper, and `e`, `pi` or `inf` its own
# variable (`print(e)` in an `except` without `as e`).
FROM = {
    "bisect": "bisect_left bisect_right insort",
    "collections": "ChainMap Counter OrderedDict defaultdict deque namedtuple",
    "datetime": "timedelta timezone",
    "decimal": "Decimal InvalidOperation ROUND_HALF_EVEN ROUND_HALF_UP",
    "fractions": "Fraction",
    "functools": "cmp_to_key lru_cache reduce total_ordering",
    "heapq": "heapify heappop heappush heappushpop nlargest nsmallest",
    "itertools": "accumulate combinations combinations_with_replacement groupby islice "
    "pairwise permutations zip_longest",
    "math": "ceil factorial floor gcd hypot isclose isqrt lcm sqrt",
    "pathlib": "Path",
    "statistics": "mean median stdev",
    "typing": "Any Callable Dict Iterable Iterator List Optional Sequence Set Tuple Union",
}
_FROM = {name: module for module, names in FROM.items() for name in names.split()}
_BUILTINS = frozenset(dir(builtins))
_CONTAINER_ATTRIBUTES = frozenset().union(*(dir(t) for t in (list, dict, set, str)))
_LINE_ENDS = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")
# A first line `#!...` or a coding cookie in line 1 or 2 (PEP 263) stays first.
_HEADER_LINE = re.compile(r"#!|#.*coding[:=]")


def complete_imports(candidate: Candidate) -> Candidate:
    """The candidate with each Python file's certain missing imports added (see above)."""
    files = {
        name: missing_imports_added(text) if name.endswith(".py") else text
        for name, text in candidate.files.items()
    }
    return candidate if files == candidate.files else candidate.model_copy(update={"files": files})


def missing_imports_added(source: str) -> str:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    free = _free_names(tree)
    if free is None:
        return source
    lines = [line for name in sorted(free) if (line := _import_for(name, tree)) is not None]
    if not lines:
        return source
    # Lines as the parser counts them (\n, \r\n, \r), not str.splitlines' (\x0c, \u2028).
    text = [piece for piece in _LINE_ENDS.split(source) if piece]
    at = _insert_line(tree, text)
    if at and not text[at - 1].endswith(("\n", "\r")):
        text[at - 1] += "\n"
    return "".join(text[:at] + [line + "\n" for line in lines] + text[at:])


def _free_names(tree: ast.Module) -> set[str] | None:
    """Names loaded but bound nowhere in the file; None when a star import could bind any."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return loaded - bound - _BUILTINS


def _import_for(name: str, tree: ast.Module) -> str | None:
    attributes, bare = _uses(name, tree)
    if name in MODULES:
        module = _module(name)
        member = getattr(module, name, None)
        if not bare and all(hasattr(module, a) for a in attributes):
            return f"import {name}"
        # The same-named member (`datetime.strptime`, `bisect(xs, x)`) only for attributes a
        # list, dict, set or str lacks: `array.append(x)` is a list the program forgot.
        distinctive = not attributes or bool(attributes - _CONTAINER_ATTRIBUTES)
        if member is not None and distinctive and all(hasattr(member, a) for a in attributes):
            return f"from {name} import {name}"
        return None
    module_name = _FROM.get(name)
    return f"from {module_name} import {name}" if module_name else None


def _uses(name: str, tree: ast.Module) -> tuple[set[str], bool]:
    """The attributes read off `name`, and whether it is also used on its own."""
    attributes: set[str] = set()
    bases: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == name
        ):
            attributes.add(node.attr)
            bases.add(id(node.value))
    bare = any(
        isinstance(node, ast.Name) and node.id == name and id(node) not in bases
        for node in ast.walk(tree)
    )
    return attributes, bare


@cache
def _module(name: str) -> object:
    return importlib.import_module(name)


def _insert_line(tree: ast.Module, lines: list[str]) -> int:
    """The line after a shebang or coding line, the module docstring and any `from __future__`
    imports (0: the top)."""
    at = 0
    while at < min(2, len(lines)) and _HEADER_LINE.match(lines[at]):
        at += 1
    for index, node in enumerate(tree.body):
        docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        at = max(at, node.end_lineno or at)
    return at
