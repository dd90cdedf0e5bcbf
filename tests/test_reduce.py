"""agent/reduce.py: the passing change with what the pass did not need taken back.

Unit tests judge variants with a predicate on the source (no generated code runs in the test
process); the loop test checks them with the task's real check in the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, LoopEvent, ReflectiveAgent
from agent.reduce import reduce_change
from agent.sandbox import Sandbox
from memory.types import NullRecall
from retrospectives.facts import diff_summary, failure_steps
from tests.helpers import GEN, REFINE, code, fix, make_task

BEFORE = """import csv
total = 0
for row in csv.DictReader(open("a.csv")):
    total += float(row["amount"])
print(total)
"""
# The fix (strip '$'), wrapped in a handler that skips rows, plus a debug print.
AFTER = """import csv
total = 0
for row in csv.DictReader(open("a.csv")):
    try:
        amount = row["amount"].replace("$", "")
        total += float(amount)
    except ValueError:
        print("skipping", row)
        continue
print("debug", total)
print(total)
"""


def needs_the_strip(files: Mapping[str, str]) -> bool:
    """What a real check would see: the strip, and the sum still made of the amounts."""
    source = files["solution.py"]
    return '.replace("$", "")' in source and "total += float(" in source


def test_the_handler_and_the_extra_line_are_taken_back_the_fix_stays() -> None:
    checked: list[str] = []

    def passes(files: Mapping[str, str]) -> bool:
        checked.append(files["solution.py"])
        return needs_the_strip(files)

    red = reduce_change({"solution.py": BEFORE}, {"solution.py": AFTER}, passes)
    source = red.files["solution.py"]
    assert "try:" not in source and "except" not in source and "skipping" not in source
    assert 'print("debug"' not in source
    assert '    amount = row["amount"].replace("$", "")\n    total += float(amount)\n' in source
    assert red.taken_back == ("try/except in solution.py", "line 6 of solution.py")
    assert red.checks == len(checked) and len(set(checked)) == len(checked)  # each once
    compile(source, "solution.py", "exec")  # still a program (compiled, never run here)


def test_nothing_is_taken_back_when_every_part_is_needed() -> None:
    red = reduce_change({"solution.py": BEFORE}, {"solution.py": AFTER}, lambda files: False)
    assert red.files == {"solution.py": AFTER} and red.taken_back == ()
    assert red.checks >= 2


def test_a_handler_the_failing_candidate_had_is_not_the_change() -> None:
    before = AFTER.replace('.replace("$", "")', "")
    red = reduce_change({"solution.py": before}, {"solution.py": AFTER}, needs_the_strip)
    assert "except ValueError:" in red.files["solution.py"]  # it was there before the fix


def test_the_budget_caps_the_checks_and_other_files_are_left_alone() -> None:
    files = {"solution.py": AFTER, "notes.txt": "try:\n  x\nexcept: pass\n"}
    red = reduce_change({"solution.py": BEFORE}, files, lambda f: True, budget=1)
    assert red.checks == 1 and red.files["notes.txt"] == files["notes.txt"]


def test_the_loop_reduces_a_passing_refinement_in_the_sandbox(tmp_path: Path) -> None:
    """Round 1 crashes on '$'; the refiner's fix wraps the strip in a handler that skips
    rows. The run passes with that answer, and the lesson's verified change is the strip."""
    checker = "import json; assert json.load(open('out.json')) == 1210.5, 'wrong total'"
    task = make_task(tmp_path, checker=checker)
    (task.workspace / "a.csv").write_text("item,amount\nx,$1200.50\ny,$10\n")
    naive = (
        BEFORE.replace("print(total)\n", "")
        + "import json\njson.dump(total, open('out.json', 'w'))\n"
    )
    fixed = (
        AFTER.replace("print(total)\n", "")
        + "import json\njson.dump(total, open('out.json', 'w'))\n"
    )
    llm = ScriptedLLM.by_system({GEN: [code(naive)], REFINE: [fix(fixed, "strip '$'")]})
    events: list[LoopEvent] = []
    agent = ReflectiveAgent(llm, recall=NullRecall(), sandbox=Sandbox(Limits(cpu_s=10)),
                            config=LoopConfig(pool_size=1), runs_dir=tmp_path / "runs")  # fmt: skip
    agent.observer = events.append
    result = agent.run(task)
    assert result.passed and len(result.rounds) == 2
    assert result.best.files["solution.py"].strip() == fixed.strip()  # the answer: what passed
    assert (
        result.verified_files is not None and "except" not in result.verified_files["solution.py"]
    )
    assert result.taken_back and result.summary().taken_back == result.taken_back
    assert any(e.kind == "reduced" for e in events)
    (step,) = failure_steps(result)
    shown = diff_summary(step.diff)
    assert '.replace("$", "")' in shown and "except" not in shown and "skipping" not in shown
    # Off: the change is shown as it passed.
    llm2 = ScriptedLLM.by_system({GEN: [code(naive)], REFINE: [fix(fixed, "strip '$'")]})
    agent2 = ReflectiveAgent(llm2, recall=NullRecall(), sandbox=Sandbox(Limits(cpu_s=10)),
                             config=LoopConfig(pool_size=1, reduce_budget=0))  # fmt: skip
    off = agent2.run(task)
    assert off.passed and off.verified_files is None and off.taken_back == ()
    assert "except" in failure_steps(off)[0].diff
