"""Building blocks for the trap generator: the Trap model, data writers, code templates.

The generator (_generate.py) imports the family modules in _families/, whose builders
register themselves with @trap; render_solution() assembles a reference solution from the
family's careful helpers (_robust/<family>.py) and the task's own code.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROBUST = HERE / "_robust"
BEGIN = "# --- trap helpers: {family} ---"
END = "# --- end trap helpers ---"
RUN = "python solution.py"
CHECK = 'python "$TASK_DIR/check.py" result.json'

# Support code the task code may use; each entry is (imports, code).
SUPPORT = {
    "read_rows": (
        ("import csv",),
        """
def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))
""",
    ),
    "read_rows_text": (
        ("import csv", "import io"),
        """
def read_rows(path):
    return list(csv.DictReader(io.StringIO(read_text(path))))
""",
    ),
    "read_jsonl": (
        ("import json",),
        """
def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
""",
    ),
    "write_json": (
        ("import json",),
        """
def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
""",
    ),
}


@dataclass
class Trap:
    family: str
    nn: int
    domain: str
    goal: str
    files: dict[str, bytes]
    expected: Any
    code: str  # defines main(); may call the family helpers and the named support code
    support: tuple[str, ...] = ("read_rows", "write_json")
    imports: tuple[str, ...] = ()
    summary: str = ""

    @property
    def name(self) -> str:
        return f"{self.family}_{self.nn:02d}_{self.domain}"


BUILDERS: list[Callable[[random.Random], Trap]] = []


def trap(builder: Callable[[random.Random], Trap]) -> Callable[[random.Random], Trap]:
    BUILDERS.append(builder)
    return builder


AGG_CODE = {
    "count": "len(values)",
    "total": "round(sum(values), 2)",
    "avg": "round(sum(values) / len(values), 2)",
    "min": "round(min(values), 2)",
    "max": "round(max(values), 2)",
}
AGG_EXAMPLE = {"count": 3, "total": 12.5, "avg": 4.17, "min": 1.2, "max": 9.75}


def agg(values: list[float], kind: str) -> float | int:
    if kind == "count":
        return len(values)
    if kind == "total":
        return round(sum(values), 2)
    if kind == "avg":
        return round(sum(values) / len(values), 2)
    if kind == "min":
        return round(min(values), 2)
    return round(max(values), 2)


def grouped_expected(
    groups: dict[str, list[float]], aggs: list[tuple[str, str]]
) -> dict[str, dict[str, float | int]]:
    return {k: {name: agg(v, kind) for name, kind in aggs} for k, v in sorted(groups.items())}


def shape(example_key: str, aggs: list[tuple[str, str]]) -> str:
    inner = ", ".join(f'"{name}": {AGG_EXAMPLE[kind]}' for name, kind in aggs)
    return f'{{"{example_key}": {{{inner}}}, ...}}'


def grouped_code(
    read: str,
    key: str,
    value: str,
    aggs: list[tuple[str, str]],
    *,
    skip_none: bool = False,
    dedup: str | None = None,
) -> str:
    lines = ["def main():", f"    rows = {read}"]
    if dedup:
        lines.append(f'    rows = unique_by(rows, "{dedup}")')
    lines += ["    groups = {}", "    for row in rows:", f"        value = {value}"]
    if skip_none:
        lines += ["        if value is None:", "            continue"]
    lines += [
        f'        groups.setdefault(row["{key}"], []).append(value)',
        "    result = {}",
        "    for key, values in sorted(groups.items()):",
        "        result[key] = {",
        *[f'            "{name}": {AGG_CODE[kind]},' for name, kind in aggs],
        "        }",
        '    write_json("result.json", result)',
    ]
    return "\n".join(lines) + "\n"


def csv_bytes(
    header: list[str],
    rows: list[list[Any]],
    *,
    delimiter: str = ",",
    encoding: str = "utf-8",
    bom: bool = False,
) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    data = buf.getvalue().encode(encoding)
    return b"\xef\xbb\xbf" + data if bom else data


def jsonl_bytes(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def spread(rng: random.Random, keys: list[str], n: int) -> list[str]:
    """n group keys, every key at least twice, in random order."""
    picks = keys * 2 + [rng.choice(keys) for _ in range(n - 2 * len(keys))]
    rng.shuffle(picks)
    return picks


def split_imports(path: Path) -> tuple[list[str], str]:
    """A helper file's leading import lines, and the code after them."""
    lines = path.read_text(encoding="utf-8").splitlines()
    imports = []
    while lines and (lines[0].startswith(("import ", "from ")) or not lines[0].strip()):
        line = lines.pop(0)
        if line.strip():
            imports.append(line)
    return imports, "\n".join(lines).strip() + "\n"


FAMILY_ORDER = [
    "currency",
    "decimal_comma",
    "percent",
    "bom",
    "latin1",
    "semicolon",
    "dates",
    "headers",
    "missing",
    "duplicates",
    "booleans",
    "jsonl",
]


def render_solution(t: Trap) -> str:
    helper_imports, helper_code = split_imports(ROBUST / f"{t.family}.py")
    support_imports: list[str] = []
    support_code: list[str] = []
    for name in t.support:
        imports, code = SUPPORT[name]
        support_imports += imports
        support_code.append(code.strip())
    imports = sorted(
        set(helper_imports) | set(support_imports) | set(t.imports),
        key=lambda line: (line.startswith("from "), line),
    )
    head = f'"""Reference solution for {t.name}: {t.summary}."""\n\n' + "\n".join(imports)
    # isort style: two blank lines after the imports before a def, one before a constant.
    gap = "\n\n\n" if helper_code.startswith("def ") else "\n\n"
    helpers = BEGIN.format(family=t.family) + "\n" + helper_code.strip() + "\n\n\n" + END
    rest = [*support_code, t.code.strip(), 'if __name__ == "__main__":\n    main()']
    return head + gap + "\n\n\n".join([helpers, *rest]) + "\n"


def render_toml(t: Trap) -> str:
    return (
        f"goal = {json.dumps(t.goal, ensure_ascii=False)}\n"
        'output = ["solution.py"]\n'
        f"run = {json.dumps(RUN)}\n"
        f"check = {json.dumps(CHECK)}\n"
        "timeout_s = 60\n"
        f'tags = ["{t.family}"]\n'
        'scope = "traps"\n'
    )
