"""The dependency rule of the README's layout section, read from the source with `ast`.

    agent (library) -> memory <- retrospectives -> agent's LLM layer and trajectory types
    agent.app -> all three; nothing imports agent.app (but `python -m agent`'s entry point)

The storage is memory's alone: outside memory/ no module imports the SQL and vector
libraries or memory's storage modules, nor reads a store's private parts (`x._db`).
Every import counts, also the lazy ones inside functions and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "memory", "retrospectives")
# What only memory/ touches: the storage libraries, its storage modules, a store's parts.
STORAGE_LIBRARIES = ("sqlmodel", "sqlalchemy", "chromadb")
STORAGE_MODULES = tuple(
    f"memory.{name}"
    for name in (
        "commit", "consolidation_methods", "counts", "db", "faults", "index", "merge_write",
        "migrate", "pools", "queries", "runs", "schema", "sync", "wiring", "write",
    )
)  # fmt: skip
PRIVATE_PARTS = frozenset({"_db", "_index", "_embedder", "_lexical"})


@dataclass(frozen=True)
class Rule:
    """Modules under `importer` (but `exempt`) import nothing under `forbidden` but `allowed`."""

    importer: str
    forbidden: tuple[str, ...]
    why: str
    allowed: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()


RULES = (
    Rule("memory", ("agent", "retrospectives"), "memory is the bottom layer: it imports neither"),
    Rule(
        "agent",
        ("agent.app", "retrospectives"),
        "the agent library knows neither the application nor the retrospective",
        exempt=("agent.app", "agent.__main__"),
    ),
    Rule(
        "agent.llm",
        ("agent", "memory", "retrospectives"),
        "the LLM layer takes plain options (BackendOptions), never the app's Settings",
        allowed=("agent.llm", "agent.errors"),
    ),
    Rule(
        "retrospectives",
        ("agent",),
        "the retrospective uses the agent's LLM layer and trajectory types, not the loop or app",
        allowed=(
            "agent.llm",
            "agent.errors",
            "agent.result",
            "agent.feedback",
            "agent.candidate",
            "agent.stopping",
        ),
    ),
    *(
        Rule(package, ("scripts", "tests", "examples"), "packages never import the repo's tools")
        for package in PACKAGES
    ),
    *(
        Rule(
            package,
            (*STORAGE_LIBRARIES, *STORAGE_MODULES),
            "the storage is memory's own: go through Memory and what memory/__init__ exports",
        )
        for package in ("agent", "retrospectives")
    ),
)


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, module: str) -> Iterator[str]:
    """Every name `path` imports, as `package.module[.attribute]` (relative ones resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from agent import app` imports agent.app: the imported name joins the module.
            yield from (f"{base}.{alias.name}" for alias in node.names)


def private_reads(path: Path) -> Iterator[str]:
    """`line: .part` for every read of a store's private part (`memory._db`, `self._index`)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_PARTS:
            yield f"{node.lineno}: .{node.attr}"


def violations(root: Path) -> list[str]:
    """`importer imports target: why` for every import under `root` that breaks a rule, and
    `module reads line: .part: why` for a store's private part read outside memory/."""
    found: list[str] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(path, root)
            if package != "memory":
                found += [
                    f"{module} reads {read}: a store's parts are memory's own"
                    for read in private_reads(path)
                ]
            for target in imported(path, module):
                for rule in RULES:
                    if (
                        _under(module, (rule.importer,))
                        and not _under(module, rule.exempt)
                        and _under(target, rule.forbidden)
                        and not _under(target, rule.allowed)
                    ):
                        found.append(f"{module} imports {target}: {rule.why}")
    return found


def test_the_packages_keep_the_dependency_rule() -> None:
    assert violations(ROOT) == []


def test_the_rule_sees_every_kind_of_import(tmp_path: Path) -> None:
    # The check itself can fail: a tree that breaks each rule once, in each import form.
    files = {
        "memory/__init__.py": "",
        "memory/bad.py": "def f():\n    import agent.loop\n",
        "agent/__init__.py": "",
        "agent/loop.py": "from agent import app\n",
        "agent/checks.py": "import retrospectives.extract\n",
        "agent/llm/__init__.py": "",
        "agent/llm/local.py": "from memory.types import Lesson\n",
        "memory/tool.py": "from scripts._benchlib import record\n",
        "agent/llm/resolve.py": "from ..app.settings import Settings\n",
        "agent/app/__init__.py": "from retrospectives import learn\nfrom memory import Memory\n",
        "retrospectives/__init__.py": "",
        "retrospectives/learn.py": "from agent.app.session import finish_run\n",
        "retrospectives/ok.py": "from agent.llm.base import LLM\nfrom agent.result import Usage\n",
        "retrospectives/rows.py": "from memory.schema import LessonRow\nimport chromadb\n",
        "agent/app/store.py": "from sqlmodel import select\n\ndef f(m):\n    return m._db\n",
        "agent/app/fine.py": "from memory import Memory\nfrom memory.types import ACTIVE\n",
        "memory/own.py": "from memory.db import Database\n\ndef f(m):\n    return m._index\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = violations(tmp_path)
    assert sorted(line.split(":")[0] for line in found) == [
        "agent.app.store imports sqlmodel.select",
        "agent.app.store reads 4",
        "agent.checks imports retrospectives.extract",
        "agent.llm.local imports memory.types.Lesson",
        "agent.llm.resolve imports agent.app.settings.Settings",
        "agent.llm.resolve imports agent.app.settings.Settings",
        "agent.loop imports agent.app",
        "memory.bad imports agent.loop",
        "memory.tool imports scripts._benchlib.record",
        "retrospectives.learn imports agent.app.session.finish_run",
        "retrospectives.rows imports chromadb",
        "retrospectives.rows imports memory.schema.LessonRow",
    ]


def test_the_console_script_and_python_m_agent_start_the_app() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["lessonloop"].partition(":")
    assert module.startswith("agent.app.")
    assert callable(getattr(importlib.import_module(module), name))
    main = ROOT / "agent" / "__main__.py"
    assert f"from {module} import {name}" in main.read_text()
