"""agent/reduce.py: the passing change with what the pass did not need taken back.

Unit tests judge variants with a predicate on the source (no generated code runs in the test
process); the loop test checks them with the task's real check in the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopEvent, ReflectiveAgent
from agent.reduce import reduce_change
from agent.sandbox import Sandbox
from memory.types import NullRecall
from retrospectives.change import diff_summary
from retrospectives.facts import failure_steps
from tests.helpers import GEN, ONE_DRAW, REFINE, code, fix, make_task

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


def test_an_added_else_branch_is_dropped_the_guard_that_fixed_it_stays() -> None:
    before = "rows = []\nfor qty in data:\n    rows.append(int(qty))\n"
    after = (
        "rows = []\nfor qty in data:\n    if qty.isdigit():\n        rows.append(int(qty))\n"
        "    else:\n        print('Invalid qty', qty)\n"
    )

    def guarded(files: Mapping[str, str]) -> bool:
        source = files["solution.py"]
        return "if qty.isdigit():" in source and "rows.append(int(qty))" in source

    red = reduce_change({"solution.py": before}, {"solution.py": after}, guarded)
    assert red.files["solution.py"] == (
        "rows = []\nfor qty in data:\n    if qty.isdigit():\n        rows.append(int(qty))\n"
    )
    assert red.taken_back == ("else at line 5 of solution.py",)


def test_the_failing_candidate_is_not_rechecked_and_outputs_not_in_python_are_left() -> None:
    checked: list[dict[str, str]] = []

    def never(files: Mapping[str, str]) -> bool:
        checked.append(dict(files))
        return False

    before = {"solution.py": "x = int(s)\nprint(x)\n"}
    after = {
        "solution.py": "x = int(s.strip())\nprint(x)\n",
        "report.md": "# total\n",
        "helper.py": "try:\n    import fast\nexcept ImportError:\n    fast = None\nprint(1)\n",
    }
    red = reduce_change(before, after, lambda f: True)
    assert red.files["helper.py"] == after["helper.py"]  # new in the pass: not reduced
    red = reduce_change(before, after, never)
    assert red.files == after and not any(
        f["solution.py"] == before["solution.py"] for f in checked
    )
    assert all(f["report.md"] == after["report.md"] for f in checked)


def test_unwrapping_keeps_decorators_and_string_contents() -> None:
    before = "import functools\n"
    after = (
        "import functools\ntry:\n    @functools.cache\n    def f():\n        return 1\n"
        "except ImportError:\n    pass\n"
    )
    red = reduce_change({"s.py": before}, {"s.py": after}, lambda f: "def f" in f["s.py"])
    assert "    @functools.cache" not in red.files["s.py"]
    assert "@functools.cache\ndef f():\n    return 1\n" in red.files["s.py"]
    text = 'try:\n    doc = """\n    a\n    """\nexcept ValueError:\n    pass\n'
    kept = reduce_change({"s.py": ""}, {"s.py": text}, lambda f: "doc" in f["s.py"])
    assert "try:" in kept.files["s.py"]  # lifting it out would change the string


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
                            config=ONE_DRAW, runs_dir=tmp_path / "runs")  # fmt: skip
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
                             config=ONE_DRAW.model_copy(update={"reduce_budget": 0}))  # fmt: skip
    off = agent2.run(task)
    assert off.passed and off.verified_files is None and off.taken_back == ()
    assert "except" in failure_steps(off)[0].diff


def test_an_earlier_failure_is_shown_the_change_as_it_passed(tmp_path: Path) -> None:
    """Round 1 crashes on '$'; round 2 swallows the error (a wrong total); round 3 strips the
    '$' and drops the handler, and passes. The reduction is relative to round 2 (it may put
    the handler back: with the strip nothing raises), so round 1's failure is shown the
    change as it passed, never a handler."""
    checker = "import json; assert json.load(open('out.json')) == 1210.5, 'wrong total'"
    task = make_task(tmp_path, checker=checker)
    (task.workspace / "a.csv").write_text("item,amount\nx,$1200.50\ny,$10\n")
    head = 'import csv, json\ntotal = 0\nfor row in csv.DictReader(open("a.csv")):\n'
    tail = "json.dump(total, open('out.json', 'w'))\n"
    add = '    total += float(row["amount"])\n'
    naive = head + "    seen = 1\n" + add + tail
    swallowed = (
        head
        + "    seen = 1\n    try:\n    "
        + add
        + "    except ValueError:\n        continue\n"
        + tail
    )
    stripped = (
        head + '    row["amount"] = row["amount"].replace("$", "")\n    seen = 1\n' + add + tail
    )
    llm = ScriptedLLM.by_system(
        {GEN: [code(naive)], REFINE: [fix(swallowed, "skip bad rows"), fix(stripped, "strip")]}
    )
    agent = ReflectiveAgent(llm, recall=NullRecall(), sandbox=Sandbox(Limits(cpu_s=10)),
                            config=ONE_DRAW)  # fmt: skip
    result = agent.run(task)
    assert result.passed and [r.feedback.kind for r in result.rounds] == [
        "runtime_error", "check_failed", "success"
    ]  # fmt: skip
    assert result.taken_back  # relative to round 2, the handler was put back
    assert "except ValueError" in (result.verified_files or {})["solution.py"]
    for step in failure_steps(result):
        added = [ln for ln in step.diff.splitlines() if ln.startswith("+")]
        assert not any("except" in ln or "continue" in ln for ln in added), step.diff
        assert any('.replace("$", "")' in ln for ln in added)
