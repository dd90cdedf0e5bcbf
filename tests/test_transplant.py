"""The failure's own fix: one expression of the failing line, as the pass wrote it, checked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agent.candidate import Candidate
from agent.container import Limits
from agent.errors import SandboxError
from agent.feedback import Feedback
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import ExecResult, Sandbox
from agent.task import Task, load_task
from agent.transplant import Judge, failure_fix
from agent.verify import Verified, verify_pass
from memory.types import NullRecall
from retrospectives.extract import Retrospective
from retrospectives.facts import failure_steps
from scripts import replay_fixes
from tests.helpers import GEN, REFINE, code, fix, make_task, write_task_dir

# The failing program: '2,31' crashes line 4, and the total it writes is wrong too.
FAILING = """import json
rows = [line.split(';') for line in open('input.txt').read().split()]
for name, value in rows:
    amount = float(value)
json.dump(round(amount, 2), open('out.json', 'w'))
"""
# The pass rewrote it: it reads the comma and also sums.
PASSING = """import json
total = 0.0
for line in open('input.txt').read().split():
    name, value = line.split(';')
    total += float(value.replace(',', '.'))
json.dump(round(total, 2), open('out.json', 'w'))
"""
CRASHED = Feedback(
    kind="runtime_error",
    stage="execution",
    summary="ValueError",
    error_type="ValueError",
    location="solution.py:4",
    key_message="ValueError: could not convert string to float: '2,31'",
)


def judged(*verdicts: Feedback) -> tuple[list[Mapping[str, str]], Judge]:
    seen: list[Mapping[str, str]] = []
    answers = iter(verdicts)

    def judge(files: Mapping[str, str]) -> Feedback:
        seen.append(dict(files))
        return next(answers)

    return seen, judge


def later(location: str | None = "solution.py:5", kind: str = "runtime_error") -> Feedback:
    return CRASHED.model_copy(update={"location": location, "kind": kind})


def test_the_fix_is_the_failing_line_with_the_passes_expression() -> None:
    seen, judge = judged(later("solution.py:5"))
    got = failure_fix({"solution.py": FAILING}, {"solution.py": PASSING}, CRASHED, judge)
    assert got is not None and len(seen) == 1
    old, new = FAILING.splitlines(), got["solution.py"].splitlines()
    assert [n for o, n in zip(old, new, strict=True) if o != n] == [
        "    amount = float(value.replace(',', '.'))"
    ]


def test_a_variant_failing_on_the_same_line_is_no_fix() -> None:
    # Still raising on line 4 (another exception there counts as the same place).
    seen, judge = judged(later("solution.py:4"))
    assert failure_fix({"solution.py": FAILING}, {"solution.py": PASSING}, CRASHED, judge) is None
    assert len(seen) == 1
    # A check that failed after the program ran through is past the crash.
    _, judge = judged(later(None, "check_failed"))
    assert failure_fix({"solution.py": FAILING}, {"solution.py": PASSING}, CRASHED, judge)


def test_nothing_to_transplant_checks_nothing() -> None:
    seen, judge = judged()
    files = {"solution.py": FAILING}
    # Another function called on the failing line; a failure that is not a crash; a line
    # in a file the pass does not have; a location that is no line.
    other = PASSING.replace("float(value.replace", "int(value.replace")
    assert failure_fix(files, {"solution.py": other}, CRASHED, judge) is None
    wrong = CRASHED.model_copy(update={"kind": "check_failed"})
    assert failure_fix(files, {"solution.py": PASSING}, wrong, judge) is None
    elsewhere = CRASHED.model_copy(update={"location": "helper.py:4"})
    assert failure_fix(files, {"solution.py": PASSING}, elsewhere, judge) is None
    nowhere = CRASHED.model_copy(update={"location": "solution.py:x"})
    assert failure_fix(files, {"solution.py": PASSING}, nowhere, judge) is None
    assert seen == []


def test_offsets_count_bytes_and_the_budget_bounds_the_checks() -> None:
    failing = FAILING.replace("    amount = float(value)", "    label = '€'; amount = float(value)")
    seen, judge = judged(later("solution.py:4"), later("solution.py:4"))
    # Two extensions of the line's expressions: `float(value.replace(...))` and
    # `float(value.strip())`; a budget of one checks only the smaller.
    passing = PASSING + "x = float(value.strip())\n"
    assert (
        failure_fix({"solution.py": failing}, {"solution.py": passing}, CRASHED, judge, budget=1)
        is None
    )
    assert len(seen) == 1
    line = seen[0]["solution.py"].splitlines()[3]
    assert line == "    label = '€'; amount = float(value.strip())"


# -- in the loop, real sandbox --------------------------------------------------------------

CHECK = "import json; assert json.load(open('out.json')) == 4.52, 'expected 4.52'"


def test_the_lesson_tells_the_failures_own_fix_not_the_rewrite(tmp_path: Path) -> None:
    task = make_task(tmp_path, checker=CHECK, goal="Sum the values of input.txt")
    assert task.workspace is not None
    (task.workspace / "input.txt").write_text("a;2,31\nb;2,21\n")
    agent = ReflectiveAgent(
        ScriptedLLM.by_system({GEN: [code(FAILING)], REFINE: [fix(PASSING, "read the comma")]}),
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(max_rounds=2, pool_size=1, first_pool=1),
    )
    result = agent.run(task)
    assert result.passed and result.failure_fix is not None
    assert result.verified_base == result.rounds[0].candidate.digest()
    (step,) = failure_steps(result)
    assert step.change == (
        "replace `amount = float(value)` with `amount = float(value.replace(',', '.'))`"
    )
    # The retrospective model still reads the whole change it made.
    assert "total += float" in step.diff
    (draft,) = Retrospective(None).analyse(result).drafts
    assert "float(value.replace(',', '.'))" in draft.fix and "total" not in draft.fix


def test_a_value_the_pass_took_further_is_taken_further_on_the_failing_line() -> None:
    failing = "import csv\nfor row in csv.DictReader(open('a.csv')):\n    x = float(row['v'])\n"
    # The pass assigned the value back, cleaned, before the same `float(row['v'])`; it also
    # has the failing line's `row['v']` inside `print(...)`, which brings nothing to it.
    passing = (
        "import csv\nfor row in csv.DictReader(open('a.csv')):\n"
        "    row['v'] = row['v'].replace(',', '.')\n    x = float(row['v'])\n    print(row['v'])\n"
    )
    crashed = CRASHED.model_copy(update={"location": "solution.py:3"})
    seen, judge = judged(later("solution.py:4"))
    got = failure_fix({"solution.py": failing}, {"solution.py": passing}, crashed, judge)
    assert got is not None and len(seen) == 1
    assert got["solution.py"].splitlines()[2] == "    x = float(row['v'].replace(',', '.'))"


def test_replay_fixes_finds_the_fix_of_a_kept_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks"
    task_dir = write_task_dir(
        tasks / "sum_values",
        inputs={"input.txt": "a;2,31\nb;2,21\n"},
        checker=CHECK,
        toml='goal = "Sum the values of input.txt"\noutput = ["solution.py"]\n'
        'check = "python solution.py && python \\"$TASK_DIR/check.py\\""\n',
    )
    agent = ReflectiveAgent(
        ScriptedLLM.by_system({GEN: [code(FAILING)], REFINE: [fix(PASSING, "read the comma")]}),
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(max_rounds=2, pool_size=1, first_pool=1, reduce_budget=0),
    )
    result = agent.run(load_task(task_dir))
    assert result.passed and result.failure_fix is None  # the loop did not look (budget 0)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "r.json").write_text(result.model_dump_json())
    out = tmp_path / "fixes.json"
    assert replay_fixes.main([str(runs), "--tasks", str(tasks), "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["runs"]
    assert row["failure_fix"] == (
        "replace `amount = float(value)` with `amount = float(value.replace(',', '.'))`"
    )
    assert row["change"].startswith("rewrite") or "total" in row["change"]
    assert '"with_a_failure_fix": 1' in capsys.readouterr().out


def test_a_comparison_or_a_conditional_on_the_value_is_no_extension() -> None:
    failing = "part, total = 1, 0\npct = part / total * 100\nok = float(v)\n"
    passing = "part, total = 1, 0\npct = part / total if total else 0.0\nok = float(v == '')\n"
    _, judge = judged(later(None, "check_failed"))
    for line in (2, 3):
        crashed = CRASHED.model_copy(update={"location": f"solution.py:{line}"})
        assert (
            failure_fix({"solution.py": failing}, {"solution.py": passing}, crashed, judge) is None
        )
    # A call of the same function with its arguments kept and a keyword added is one.
    failing = "import csv\nrows = list(csv.DictReader(open('a.csv')))\nx = rows[0]['id']\n"
    passing = "import csv\nrows = list(csv.DictReader(open('a.csv', encoding='utf-8-sig')))\n"
    crashed = CRASHED.model_copy(update={"location": "solution.py:2"})
    got = failure_fix({"solution.py": failing}, {"solution.py": passing}, crashed, judge)
    assert got is not None
    assert got["solution.py"].splitlines()[1] == passing.splitlines()[1]


def test_a_timeout_or_a_limit_is_not_past_the_line() -> None:
    for kind in ("timeout", "resource_error", "syntax_error"):
        seen, judge = judged(later(None, kind))
        assert (
            failure_fix({"solution.py": FAILING}, {"solution.py": PASSING}, CRASHED, judge) is None
        )
        assert len(seen) == 1


def test_lines_are_counted_as_python_counts_them() -> None:
    # A '\u2028' or a form feed inside the program ends no line for `ast`: the variant
    # changes the line that raised, whatever comes before it.
    for odd in ("sep = '\u2028'\n", "a = 1\x0c\n"):
        failing = odd + "label = 'ééé'; v = 'x'\nx = float(v)\n"
        passing = "x = float(v.strip())\n"
        crashed = CRASHED.model_copy(update={"location": "solution.py:3"})
        seen, judge = judged(later(None, "check_failed"))
        got = failure_fix({"solution.py": failing}, {"solution.py": passing}, crashed, judge)
        assert got is not None
        assert got["solution.py"] == failing.replace("float(v)", "float(v.strip())")


def sum_task(tmp_path: Path) -> Task:
    task = make_task(tmp_path, checker=CHECK, goal="Sum the values of input.txt")
    assert task.workspace is not None
    (task.workspace / "input.txt").write_text("a;2,31\nb;2,21\n")
    return task


def test_verify_pass_keeps_the_fix_when_nothing_is_taken_back(tmp_path: Path) -> None:
    failing, passing = (Candidate(files={"solution.py": s}, text="") for s in (FAILING, PASSING))
    sandbox = Sandbox(Limits(cpu_s=10))
    got = verify_pass(sum_task(tmp_path), sandbox, failing, CRASHED, passing, budget=2)
    assert got.verified_base == failing.digest() and got.failure_fix is not None
    assert got.verified_files is None and got.taken_back == ()
    assert "solution.py:4 (1 checks)" in got.detail


class BreakingSandbox(Sandbox):
    """A sandbox that passes its self-test, then breaks."""

    broken = False

    def run(self, *args: Any, **kwargs: Any) -> ExecResult:
        if self.broken:
            raise SandboxError("bwrap vanished")
        return super().run(*args, **kwargs)


def test_a_sandbox_that_breaks_after_the_pass_leaves_nothing_verified(tmp_path: Path) -> None:
    failing, passing = (Candidate(files={"solution.py": s}, text="") for s in (FAILING, PASSING))
    sandbox = BreakingSandbox(Limits(cpu_s=10))
    sandbox.broken = True
    got = verify_pass(sum_task(tmp_path), sandbox, failing, CRASHED, passing, budget=8)
    assert got.result_fields() == Verified().result_fields()  # nothing verified
    assert got.verified_base is None and got.detail == "not verified: SandboxError: bwrap vanished"
