"""Compare a JSON file written by the solution with expected.json (kept next to this checker).

Usage: python check.py RESULT_FILE   (run in the workspace; exit 0 = pass)

Stdlib only. Prints a few short lines naming what is wrong and what was produced, but never
an expected value: the check output is feedback the model reads, and the model must not be
able to copy the answer instead of fixing its code. The last line is always
`LESSONLOOP_SCORE MATCHED/TOTAL`: how many expected values were produced right, the partial
credit the loop ranks failing candidates by.
This file is the canonical copy: _generate.py copies it into every trap task as check.py,
and the JSON-output demo tasks in examples/tasks carry the same file.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TOLERANCE = 0.01  # answers are rounded to 2 decimals; allow one unit in the last place
MAX_REPORTED = 5


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def compare(expected: Any, got: Any, where: str) -> Iterator[str]:
    """Yield one line per difference between the expected and the produced JSON value."""
    if isinstance(expected, dict):
        yield from _compare_objects(expected, got, where)
    elif isinstance(expected, list):
        yield from _compare_lists(expected, got, where)
    elif isinstance(expected, bool) or expected is None or isinstance(expected, str):
        if got != expected or type(got) is not type(expected):
            yield f"{where}: wrong value, got {_short(got)}"
    elif isinstance(got, bool) or not isinstance(got, int | float):
        yield f"{where}: expected a number, got {_kind(got)} {_short(got)}"
    elif not math.isfinite(got) or abs(got - expected) > TOLERANCE + 1e-9:
        direction = "too high" if got > expected else "too low"
        yield f"{where}: wrong value, got {got} ({direction})"


def _compare_objects(expected: dict[str, Any], got: Any, where: str) -> Iterator[str]:
    if not isinstance(got, dict):
        yield f"{where}: expected an object, got {_kind(got)} {_short(got)}"
        return
    for key in expected:
        if key not in got:
            yield f"{where}: missing key {key!r}"
    for key in got:
        if key not in expected:
            yield f"{where}: unexpected key {key!r}"
    for key in expected:
        if key in got:
            yield from compare(expected[key], got[key], f"{where}[{key!r}]")


def _compare_lists(expected: list[Any], got: Any, where: str) -> Iterator[str]:
    if not isinstance(got, list):
        yield f"{where}: expected a list, got {_kind(got)} {_short(got)}"
    elif len(got) != len(expected):
        direction = "too many" if len(got) > len(expected) else "too few"
        yield f"{where}: wrong number of items, got {len(got)} ({direction})"
    else:
        for index, (exp, item) in enumerate(zip(expected, got, strict=True)):
            yield from compare(exp, item, f"{where}[{index}]")


def leaves(expected: Any) -> int:
    """How many values the expected JSON holds (objects and lists count their members)."""
    if isinstance(expected, dict):
        return sum(leaves(v) for v in expected.values())
    if isinstance(expected, list):
        return sum(leaves(v) for v in expected)
    return 1


def matched(expected: Any, got: Any) -> int:
    """How many of those values `got` has right, by the same rules as `compare`."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return 0
        return sum(matched(v, got[k]) for k, v in expected.items() if k in got)
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            return 0
        return sum(matched(e, g) for e, g in zip(expected, got, strict=True))
    return 0 if any(True for _ in compare(expected, got, "")) else 1


def load(name: str) -> tuple[Any, str | None]:
    """The JSON in the file `name`, or None and why it could not be read."""
    path = Path(name)
    if not path.is_file():
        return None, f"{name} not found: the solution must write it in the current directory"
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except UnicodeDecodeError:
        return None, f"{name} is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"{name} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else "result.json"
    expected = json.loads(Path(__file__).resolve().with_name("expected.json").read_text("utf-8"))
    got, error = load(name)
    problems = [error] if error else list(compare(expected, got, name))
    if not problems:
        print(f"{name}: all values match")
    elif error:
        print(error)
    else:
        print(f"{name}: {len(problems)} problem(s)")
        for line in problems[:MAX_REPORTED]:
            print(f"  {line}")
        if len(problems) > MAX_REPORTED:
            print(f"  ... and {len(problems) - MAX_REPORTED} more")
    print(f"LESSONLOOP_SCORE {matched(expected, got) if not error else 0}/{leaves(expected)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
