"""A repair that returns only the changed functions is spliced into the program it repairs."""

from __future__ import annotations

import ast
from pathlib import Path

from agent.candidate import Candidate
from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from agent.splice import programs_of, splice, splice_repair
from agent.task import Task
from memory.types import NullRecall
from tests.helpers import GEN, REFINE, code, fix, make_task

PROGRAM = """\
import json


def read(path):
    return ["$1", "$2"]


def total(values):
    return sum(float(v) for v in values)


if __name__ == "__main__":
    json.dump(total(read("x")), open("out.json", "w"))
"""

FRAGMENT = """\
import re

def total(values):
    return sum(float(re.sub(r"[^0-9.]", "", v)) for v in values)
"""


def names(source: str) -> list[str]:
    return [getattr(n, "name", type(n).__name__) for n in ast.parse(source).body]


def test_a_function_only_repair_replaces_its_namesake_and_keeps_the_main_part() -> None:
    whole = splice(PROGRAM, FRAGMENT)
    assert whole is not None
    assert names(whole) == ["Import", "Import", "read", "total", "If"]
    assert 're.sub(r"[^0-9.]", "", v)' in whole and "float(v) for v" not in whole
    namespace: dict[str, object] = {}
    exec(compile(whole.replace('"__main__"', '"no"'), "spliced", "exec"), namespace)  # noqa: S102
    assert namespace["total"](["$1", "$2"]) == 3.0  # type: ignore[operator]


def test_a_new_helper_goes_before_the_main_part_and_decorators_move_with_their_function() -> None:
    program = "import functools\n\n@functools.cache\ndef f():\n    return 1\n\nprint(f())\n"
    fragment = "def helper():\n    return 2\n\n@functools.cache\ndef f():\n    return helper()\n"
    whole = splice(program, fragment)
    assert whole is not None
    assert names(whole) == ["Import", "f", "helper", "Expr"]  # after the last definition
    assert whole.count("@functools.cache") == 1 and "return helper()" in whole


def test_anything_that_is_not_a_patch_is_left_as_written() -> None:
    full = FRAGMENT + '\nprint(total(["1"]))\n'
    assert splice(PROGRAM, full) is None  # a whole program
    assert splice(PROGRAM, "def other():\n    return 1\n") is None  # shares no name
    assert splice(PROGRAM, "def total(:\n") is None  # does not parse
    assert splice("def total(v):\n    return v\n", FRAGMENT) is None  # the old one runs nothing
    cand = Candidate(files={"notes.md": "def total(): pass"}, text="")
    assert splice_repair(Candidate(files={"notes.md": PROGRAM}, text=""), cand, {"x.py"}) is cand
    twice = PROGRAM.replace(
        "def read(path):", "def total(values):\n    return 0\n\n\ndef read(path):"
    )
    assert splice(twice, FRAGMENT) is None  # which `total` is meant is unclear
    cls = "class P:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n"
    cls += "\nP()\n"
    assert splice(cls, "class P:\n    def a(self):\n        return 3\n") is None  # b would go


def test_only_a_file_the_task_runs_as_a_program_is_spliced() -> None:
    program = Task(
        id="p", goal="g", output=("solution.py",), run="python solution.py", check="python c.py"
    )
    assert programs_of(program) == {"solution.py"}
    both = Task(id="c", goal="g", output=("solution.py",), check="python3 -u solution.py && ok")
    assert programs_of(both) == {"solution.py"}
    module = Task(id="m", goal="g", output=("solution.py",), check='python "$TASK_DIR/check.py"')
    assert programs_of(module) == frozenset()
    old = Candidate(
        files={"solution.py": "def add(a, b):\n    return 0\n\nassert add(2, 2) == 5\n"}, text=""
    )
    new = Candidate(files={"solution.py": "def add(a, b):\n    return a + b\n"}, text="")
    # A module checked by import is complete with functions only: its old asserts stay out.
    assert splice_repair(old, new, programs_of(module)) is new


def test_the_last_of_two_fragment_definitions_wins_and_imports_follow_future_imports() -> None:
    program = (
        "from __future__ import annotations\nimport json\n\ndef f():\n    return 1\n\nprint(f())\n"
    )
    fragment = "import re\n\ndef f():\n    return 2\n\ndef f():\n    return 3\n"
    whole = splice(program, fragment)
    assert whole is not None
    assert names(whole) == ["ImportFrom", "Import", "Import", "f", "Expr"]
    assert "return 3" in whole and "return 2" not in whole and "return 1" not in whole


def test_a_new_class_goes_after_the_base_it_needs_and_odd_line_breaks_stay_inside_lines() -> None:
    program = (
        "X = 1\n\nclass Base:\n    s = '\x0c'\n\ndef make():\n    return Base()\n\nprint(make())\n"
    )
    fragment = "class Child(Base):\n    pass\n\ndef make():\n    return Child()\n"
    whole = splice(program, fragment)
    assert whole is not None
    assert names(whole) == ["Assign", "Base", "make", "Child", "Expr"]
    namespace: dict[str, object] = {}
    exec(compile(whole.replace("print(make())", "r = make()"), "s", "exec"), namespace)  # noqa: S102
    assert type(namespace["r"]).__name__ == "Child"


def test_the_loop_checks_the_spliced_program_and_passes(tmp_path: Path) -> None:
    crash = "import json\n\ndef value():\n    return {}['x']\n\n"
    crash += "json.dump(value(), open('out.json', 'w'))"
    patch = "def value():\n    return 42\n"
    llm = ScriptedLLM.by_system({GEN: [code(crash)], REFINE: [fix(patch, "return the answer")]})
    agent = ReflectiveAgent(
        llm,
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(pool_size=1, first_pool=1),
        runs_dir=tmp_path / "runs",
    )
    result = agent.run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    final = result.rounds[-1].candidate.files["solution.py"]
    assert "return 42" in final and "json.dump(value()" in final
