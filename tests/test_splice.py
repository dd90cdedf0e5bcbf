"""A repair that returns only the changed functions is spliced into the program it repairs."""

from __future__ import annotations

import ast
from pathlib import Path

from agent.candidate import Candidate
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Limits, Sandbox
from agent.splice import splice, splice_repair
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
    assert names(whole) == ["Import", "f", "helper", "Expr"]
    assert whole.count("@functools.cache") == 1 and "return helper()" in whole


def test_anything_that_is_not_a_patch_is_left_as_written() -> None:
    full = FRAGMENT + '\nprint(total(["1"]))\n'
    assert splice(PROGRAM, full) is None  # a whole program
    assert splice(PROGRAM, "def other():\n    return 1\n") is None  # shares no name
    assert splice(PROGRAM, "def total(:\n") is None  # does not parse
    assert splice("def total(v):\n    return v\n", FRAGMENT) is None  # the old one runs nothing
    cand = Candidate(files={"notes.md": "def total(): pass"}, text="")
    assert splice_repair(Candidate(files={"notes.md": PROGRAM}, text=""), cand) is cand


def test_the_loop_checks_the_spliced_program_and_passes(tmp_path: Path) -> None:
    crash = "import json\n\ndef value():\n    return {}['x']\n\n"
    crash += "json.dump(value(), open('out.json', 'w'))"
    patch = "def value():\n    return 42\n"
    llm = ScriptedLLM.by_system({GEN: [code(crash)], REFINE: [fix(patch, "return the answer")]})
    agent = ReflectiveAgent(
        llm,
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(pool_size=1),
        runs_dir=tmp_path / "runs",
    )
    result = agent.run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    final = result.rounds[-1].candidate.files["solution.py"]
    assert "return 42" in final and "json.dump(value()" in final
