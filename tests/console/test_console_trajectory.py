"""agent/app/console/trajectory.py: diffs between rounds, a missing or broken trajectory.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.app.console.trajectory import TrajectoryError, diff_files, load, rounds, verified
from agent.candidate import Candidate
from agent.result import PoolEntry, RunResult
from tests.retro.builders import (
    CRASH,
    GOOD,
    OK,
    VALUE_ERROR,
    candidate,
    fixed_once,
    record,
    run,
)


def test_first_round_shows_whole_files_later_rounds_the_change() -> None:
    first, second = candidate(CRASH), candidate(GOOD, note="strip the dollar sign")
    (whole,) = diff_files(None, first)
    assert all(line.startswith(("+", "---", "@@")) for line in whole.lines)
    (change,) = diff_files(first, second)
    assert [
        line for line in change.lines if line.startswith(("-", "+")) and line[1:2] != line[:1]
    ] == [
        "-total = sum(float(r[1]) for r in rows)",
        "+total = sum(float(r[1].strip().lstrip('$')) for r in rows)",
    ]
    assert diff_files(second, second) == ()  # unchanged: nothing to show
    dropped = diff_files(
        Candidate(files={"a.py": "x", "b.py": "y"}, text=""),
        Candidate(files={"a.py": "x"}, text=""),
    )
    assert [d.name for d in dropped] == ["b.py"]


def test_rounds_carry_checks_lessons_and_notes() -> None:
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR, ("les_a",)),
        record(2, candidate(GOOD, "strip"), OK),
    )
    one, two = rounds(result)
    assert one.recalled_lesson_ids == ("les_a",) and one.checks[0].kind == "runtime_error"
    assert one.diffs[0].lines[0] == "--- nothing/solution.py"  # round 1 repaired no round
    assert two.fix_note == "strip" and two.diffs[0].name == "solution.py"


def test_a_round_that_went_back_is_diffed_against_the_round_it_repaired() -> None:
    # Round 2 did worse; round 3 repaired round 1 again: its diff is from round 1's program.
    worse = candidate(CRASH + "\nx = {}['missing']", "guess")
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, worse, VALUE_ERROR),
        record(3, candidate(GOOD, "strip"), OK).model_copy(update={"repairs": 1}),
    )
    one, two, three = rounds(result)
    assert (one.repairs, two.repairs, three.repairs) == (None, 1, 1)
    changed = [ln for ln in three.diffs[0].lines if ln[:1] in "+-" and ln[1:2] != ln[:1]]
    assert changed == [
        "-total = sum(float(r[1]) for r in rows)",
        "+total = sum(float(r[1].strip().lstrip('$')) for r in rows)",
    ]
    assert three.diffs[0].lines[0] == "--- round 1/solution.py"


def test_a_repair_of_the_runner_up_is_diffed_against_the_runner_up() -> None:
    # Round 2's pass repaired round 1's runner-up (a refine_alt draw), not its chosen program.
    runner_up = candidate(CRASH.replace("rows)", "rows if r)"))
    alt = PoolEntry(origin="refine_alt", temperature=0.8, kind="success", tokens=9, chosen=True)
    passing = record(2, candidate(GOOD, "strip"), OK)
    result = run(
        record(1, candidate("import json\n" + CRASH), VALUE_ERROR),
        passing.model_copy(update={"repaired": record(1, runner_up, VALUE_ERROR), "pool": (alt,)}),
    )
    _, two = rounds(result)
    assert two.repaired_from == "round 1's runner-up"
    assert two.diffs[0].lines[0] == "--- round 1's runner-up/solution.py"
    changed = [ln for ln in two.diffs[0].lines if ln[:1] in "+-" and ln[1:2] != ln[:1]]
    assert changed == [
        "-total = sum(float(r[1]) for r in rows if r)",
        "+total = sum(float(r[1].strip().lstrip('$')) for r in rows)",
    ]


def test_a_missing_or_broken_trajectory_says_why(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryError, match="does not exist"):
        load(tmp_path)
    (tmp_path / "trajectory.json").write_text("{not json")
    with pytest.raises(TrajectoryError, match="cannot be read"):
        load(tmp_path)


# Round 2's pass also added a print the check does not need: the reduction took it back.
NOISY = GOOD + "\nprint('debug', len(rows))"


def verified_run() -> RunResult:
    failing = candidate(CRASH)
    return run(
        record(1, failing, VALUE_ERROR), record(2, candidate(NOISY, "strip"), OK)
    ).model_copy(
        update={
            "verified_base": failing.digest(),
            "verified_files": {"solution.py": GOOD},
            "taken_back": ("line 4 of solution.py",),
            "failure_fix": {"solution.py": GOOD},
        }
    )


def test_what_the_pass_verified_is_diffed_from_the_failure_it_repaired() -> None:
    view = verified(verified_run())
    assert view is not None
    assert view.repaired == "round 1" and view.failure.kind == "runtime_error"
    assert view.taken_back == ("line 4 of solution.py",)
    (change,) = view.change
    assert change.lines[:2] == ("--- round 1/solution.py", "+++ the pass/solution.py")
    added = [ln for ln in change.lines if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ["+total = sum(float(r[1].strip().lstrip('$')) for r in rows)"]  # no print
    (fix,) = view.failure_fix
    assert fix.lines[1] == "+++ fixed/solution.py"


def test_a_round_one_pass_is_verified_from_the_nearest_failing_draw() -> None:
    nearest = record(1, candidate(CRASH), VALUE_ERROR)
    passed = run(record(1, candidate(GOOD), OK)).model_copy(
        update={"first_failure": nearest, "verified_base": nearest.candidate.digest()}
    )
    view = verified(passed)
    assert view is not None and view.repaired == "round 1's nearest failing draw"
    assert view.failure_fix == () and view.taken_back == ()


def test_nothing_verified_shows_nothing() -> None:
    assert verified(fixed_once()) is None  # nothing verified: no view
    unknown = verified_run().model_copy(update={"verified_base": "not-a-digest"})
    assert verified(unknown) is None
    failed = verified_run().model_copy(update={"passed": False})
    assert verified(failed) is None


def test_a_pass_that_repaired_a_runner_up_says_so() -> None:
    # The verified change is from round 1's runner-up, not its chosen program: the section
    # names it as the trajectory below does.
    runner_up = candidate(CRASH.replace("float(r[1])", "int(r[1])"))
    alt = PoolEntry(origin="refine_alt", temperature=0.8, kind="success", tokens=9, chosen=True)
    second = record(2, candidate(GOOD), OK).model_copy(
        update={"repairs": 1, "repaired": record(1, runner_up, VALUE_ERROR), "pool": (alt,)}
    )
    result = run(record(1, candidate(CRASH), VALUE_ERROR), second).model_copy(
        update={"verified_base": runner_up.digest()}
    )
    view = verified(result)
    assert view is not None and view.repaired == "round 1's runner-up"
    assert view.repaired == rounds(result)[1].repaired_from
    assert view.change[0].lines[0] == "--- round 1's runner-up/solution.py"
