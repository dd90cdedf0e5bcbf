"""classify() on recorded outputs: the decision order and the compression (pure unit tests).

The same decisions on real processes are in tests/test_sandbox.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.checks import execute
from agent.classify import classify, program_said
from agent.container import Limits
from agent.errors import TaskCheckError
from agent.pytrace import check_defect
from agent.sandbox import ExecResult, Sandbox
from tests.helpers import GOOD, make_task

HOST_WS = Path("/tmp/lessonloop-run-abc/workspace")


def result(
    *,
    exit_code: int | None = 1,
    signal: int | None = None,
    stdout: str = "",
    stderr: str = "",
    timed_out: bool = False,
    duration_s: float = 0.5,
) -> ExecResult:
    return ExecResult(
        command="python solution.py",
        exit_code=exit_code,
        signal=signal,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        duration_s=duration_s,
        truncated=False,
        workspace=HOST_WS,
    )


HEADLESS_SYNTAX = """\
  File "/workspace/solution.py", line 4
    return [x for x in
           ^
SyntaxError: '[' was never closed
"""

CHAINED = """\
Traceback (most recent call last):
  File "/workspace/solution.py", line 3, in parse
    return int(text)
           ^^^^^^^^^
ValueError: invalid literal for int() with base 10: 'abc'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/workspace/solution.py", line 8, in <module>
    main()
  File "/workspace/solution.py", line 6, in main
    raise RuntimeError("could not parse row 3")
RuntimeError: could not parse row 3
"""

CHECKER_KEYERROR = """\
Traceback (most recent call last):
  File "/task/check.py", line 7, in <module>
    assert report["total"] == 1234.5
           ~~~~~~^^^^^^^^^
KeyError: 'total'
"""


def test_exit_zero_is_success_even_with_a_printed_traceback() -> None:
    feedback = classify(result(exit_code=0, stderr=CHAINED))
    assert feedback.kind == "success" and feedback.passed


def test_syntax_error_without_traceback_header() -> None:
    feedback = classify(result(stderr=HEADLESS_SYNTAX))
    assert feedback.kind == "syntax_error"
    assert feedback.location == "solution.py:4"
    assert feedback.failing_example == "return [x for x in"
    assert feedback.key_message == "SyntaxError: '[' was never closed"


def test_last_of_chained_exceptions_wins() -> None:
    feedback = classify(result(stderr=CHAINED))
    assert feedback.kind == "runtime_error"
    assert feedback.error_type == "RuntimeError"
    assert feedback.location == "solution.py:6"
    assert feedback.failing_example == 'raise RuntimeError("could not parse row 3")'


def test_host_workspace_paths_count_as_workspace() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        f'  File "{HOST_WS}/pkg/mod.py", line 2, in <module>\n'
        "    1 / 0\n"
        "ZeroDivisionError: division by zero\n"
    )
    feedback = classify(result(stderr=stderr))
    assert feedback.location == "pkg/mod.py:2"


def test_qualified_exception_names_are_shortened() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "solution.py", line 1, in <module>\n'
        "    json.loads('')\n"
        '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads\n'
        "    return _default_decoder.decode(s)\n"
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
    )
    feedback = classify(result(stderr=stderr))
    assert feedback.error_type == "JSONDecodeError"
    assert feedback.location == "solution.py:1"  # the candidate's frame, not the stdlib's
    assert feedback.key_message is not None
    assert feedback.key_message.startswith("json.decoder.JSONDecodeError")


def test_checker_exception_is_check_failed_and_hides_checker_source() -> None:
    feedback = classify(result(stderr=CHECKER_KEYERROR))
    assert feedback.kind == "check_failed"
    assert feedback.error_type == "KeyError"
    assert feedback.location is None
    shown = feedback.compressed() + feedback.summary
    assert "1234.5" not in shown  # the expected answer stays with the checker


def test_error_word_without_traceback_is_not_an_exception() -> None:
    feedback = classify(result(stdout="row 1 ok\n", stderr="Error: expected 3 rows, got 2\n"))
    assert feedback.kind == "check_failed"
    assert feedback.error_type is None
    assert feedback.key_message == "Error: expected 3 rows, got 2"


def test_check_failed_prefers_the_line_that_says_what_was_wrong() -> None:
    stdout = (
        "FAILED test_x.py::test_total - assert 3 == 4\n"
        "E   assert 3 == 4\n"
        "1 failed, 2 passed in 0.31s\n"
    )
    feedback = classify(result(stdout=stdout))
    assert feedback.kind == "check_failed"
    assert feedback.key_message == "E   assert 3 == 4"
    assert feedback.failing_example is not None and "test_total" in feedback.failing_example


def test_a_list_s_tail_is_not_the_key_message() -> None:
    # latin1_01 on the 1.5B: the trap checker listed missing keys, and the refiner was shown
    # "... and 5 more" as the message.
    stdout = (
        "result.json: 7 problem(s)\n  result.json: missing key 'München'\n"
        "  result.json: missing key 'Zürich'\n  ... and 5 more\n"
    )
    feedback = classify(result(stdout=stdout))
    assert feedback.key_message == "result.json: missing key 'Zürich'"
    # A program's warning saying "missing" does not beat the checker's "wrong value".
    warned = classify(
        result(stdout="result.json['n']: wrong value, got 4\n", stderr="Warning: missing score\n")
    )
    assert warned.key_message == "result.json['n']: wrong value, got 4"
    assert feedback.failing_example is not None and "München" in feedback.failing_example


def test_check_failed_without_output() -> None:
    feedback = classify(result(exit_code=3))
    assert feedback.kind == "check_failed"
    assert feedback.key_message == "exit status 3 with no output"


@pytest.mark.parametrize(
    ("signal", "name"), [(9, "SIGKILL"), (24, "SIGXCPU"), (25, "SIGXFSZ"), (11, "SIGSEGV")]
)
def test_limit_signals_are_resource_errors(signal: int, name: str) -> None:
    feedback = classify(result(exit_code=128 + signal, signal=signal))
    assert feedback.kind == "resource_error"
    assert feedback.error_type == name


def test_other_signals_are_runtime_errors() -> None:
    feedback = classify(result(exit_code=134, signal=6))
    assert feedback.kind == "runtime_error"
    assert feedback.error_type == "SIGABRT"


@pytest.mark.parametrize(
    "line",
    [
        "OSError: [Errno 27] File too large",
        "OSError: [Errno 12] Cannot allocate memory",
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 8.00 GiB",
    ],
)
def test_python_resource_exceptions(line: str) -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/solution.py", line 9, in <module>\n'
        "    work()\n"
        f"{line}\n"
    )
    feedback = classify(result(stderr=stderr))
    assert feedback.kind == "resource_error"
    assert feedback.location == "solution.py:9"


def test_shell_fork_failure_is_a_resource_error() -> None:
    stderr = "bash: fork: retry: Resource temporarily unavailable\n"
    feedback = classify(result(exit_code=254, stderr=stderr))
    assert feedback.kind == "resource_error"


def test_network_error_is_runtime_error_with_hint_even_outside_the_workspace() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        "socket.gaierror: [Errno -3] Temporary failure in name resolution\n"
    )
    feedback = classify(result(stderr=stderr))
    assert feedback.kind == "runtime_error"
    assert feedback.error_type == "gaierror"
    assert any("no network" in issue for issue in feedback.issues)


def test_timeout_signature_does_not_depend_on_the_duration() -> None:
    first = classify(result(exit_code=None, signal=9, timed_out=True, duration_s=2.01))
    second = classify(result(exit_code=None, signal=9, timed_out=True, duration_s=2.49))
    assert first.kind == "timeout"
    assert first.signature() == second.signature()


def test_memory_addresses_do_not_change_the_signature() -> None:
    def crash(address: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            '  File "/workspace/solution.py", line 2, in <module>\n'
            "    obj.missing\n"
            f"AttributeError: <Thing object at {address}> has no attribute 'missing'\n"
        )

    first = classify(result(stderr=crash("0x7f3a2c1b9e50")))
    second = classify(result(stderr=crash("0x7f11d00a4c10")))
    assert first.signature() == second.signature()


def test_fields_stay_short_and_log_path_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    stderr = "Traceback (most recent call last):\n" + (
        f'  File "/workspace/solution.py", line 1, in <module>\n    f()\nValueError: {"x" * 5000}\n'
    )
    feedback = classify(result(stderr=stderr), log_path=log)
    assert feedback.log_path == log
    assert feedback.key_message is not None and len(feedback.key_message) <= 300
    assert len(feedback.compressed().splitlines()) <= 6


def test_partial_credit_is_read_from_the_last_score_line() -> None:
    from agent.classify import partial_credit

    assert partial_credit("x\nLESSONLOOP_SCORE 3/9\nLESSONLOOP_SCORE 7/9\n") == pytest.approx(7 / 9)
    assert partial_credit("LESSONLOOP_SCORE 12/9") == 1.0  # clamped
    assert partial_credit("LESSONLOOP_SCORE 1/0") is None
    assert partial_credit("score 7/9") is None and partial_credit(" LESSONLOOP_SCORE 1/2") is None


def test_program_said_groups_alike_lines_most_frequent_first() -> None:
    out = "Total: 4.5\n" + "".join(f"Warning: row {i} bad\n" for i in range(3)) + "\n"
    assert program_said(out) == "'Warning: row 0 bad' and 2 more like it; 'Total: 4.5'"
    many = "".join(f"{word} line\n" for word in ("one", "two", "three", "four", "five"))
    assert program_said(many) == "'one line'; 'two line'; 'three line'; 2 other kind(s) of line"
    assert program_said("\n  \n") is None
    assert program_said("  LESSONLOOP_SCORE 9/9\nok\n") == "'ok'"  # a score line is never shown


def test_a_failed_check_shows_what_the_program_printed(tmp_path: Path) -> None:
    # The program hides its error (every row "skipped") and writes a wrong answer: the
    # checker only sees the wrong value, the program's own messages say why.
    task = make_task(tmp_path, check='python "$TASK_DIR/check.py"')
    task = task.model_copy(update={"run": "python solution.py"})
    program = (
        "import json\nfor i in range(5):\n    print(f'Skipping row {i}: bad value')\n"
        "json.dump(0, open('out.json', 'w'))"
    )
    sandbox = Sandbox(Limits(cpu_s=10))
    feedback = execute(task, {"solution.py": program}, sandbox=sandbox)
    assert feedback.kind == "check_failed"
    assert feedback.program_said == "'Skipping row 0: bad value' and 4 more like it"
    assert "the program printed: 'Skipping row 0: bad value'" in feedback.compressed()
    quiet = "import json\njson.dump(0, open('out.json', 'w'))"
    assert execute(task, {"solution.py": quiet}, sandbox=sandbox).program_said is None


@pytest.mark.parametrize(
    ("statement", "module"),
    [
        ("import nowhere_pkg as pd", "nowhere_pkg"),
        ("from nowhere_pkg.loader import Loader", "nowhere_pkg"),
        ("import json.nowhere_mod", "json.nowhere_mod"),  # json is there, its submodule not
    ],
)
def test_an_import_of_a_missing_module_says_to_do_without_it(
    tmp_path: Path, statement: str, module: str
) -> None:
    # A small model told only "No module named 'pandas'" imports pandas again every round.
    task = make_task(tmp_path, check='python "$TASK_DIR/check.py"')
    task = task.model_copy(update={"run": "python solution.py"})
    program = f"import json\n{statement}\njson.dump(0, open('out.json', 'w'))"
    feedback = execute(task, {"solution.py": program}, sandbox=Sandbox(Limits(cpu_s=10)))
    assert feedback.kind == "runtime_error"
    assert feedback.location == "solution.py:2"
    hint = f"'{module}' cannot be imported where the program runs"
    assert any(issue.startswith(hint) for issue in feedback.issues)
    assert f"issue: {hint}" in feedback.compressed()


def test_a_missing_module_in_the_checker_is_its_verdict_without_a_hint() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/task/check.py", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'pandas'\n"
    )
    feedback = classify(result(stderr=stderr))
    assert feedback.kind == "check_failed"
    assert feedback.issues == ()
    other = classify(result(stderr=CHAINED))
    assert other.kind == "runtime_error" and other.issues == ()
    wrapped = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/solution.py", line 3, in <module>\n'
        "RuntimeError: plugin failed: No module named 'helpers'\n"
    )
    wrapped_feedback = classify(result(stderr=wrapped))
    assert wrapped_feedback.kind == "runtime_error" and wrapped_feedback.issues == ()  # no import


@pytest.mark.parametrize(
    ("checker", "says"),
    [
        # Its own data file misspelled: no candidate can pass.
        (
            "import json, pathlib\nhere = pathlib.Path(__file__).parent\n"
            "want = json.loads((here / 'expectd.json').read_text())\n",
            "$TASK_DIR/check.py:3: FileNotFoundError",
        ),
        ("import json\nif True\n    pass\n", "SyntaxError"),
    ],
)
def test_a_check_broken_in_its_own_code_stops_the_run_and_says_so(
    tmp_path: Path, checker: str, says: str
) -> None:
    task = make_task(tmp_path, check='python "$TASK_DIR/check.py"', checker=checker)
    task = task.model_copy(update={"run": "python solution.py"})
    with pytest.raises(TaskCheckError, match="failed in its own code, not the candidate") as err:
        execute(task, {"solution.py": GOOD}, sandbox=Sandbox(Limits(cpu_s=10)))
    assert says in str(err.value) and "fix the check" in str(err.value)


def test_a_check_that_meets_the_candidate_s_fault_is_its_verdict(tmp_path: Path) -> None:
    # The output file is missing, or the candidate's own code raises inside the check: the
    # candidate's doing, not a broken check.
    task = make_task(tmp_path, check='python "$TASK_DIR/check.py"')
    task = task.model_copy(update={"run": "python solution.py"})
    sandbox = Sandbox(Limits(cpu_s=10))
    missing = execute(task, {"solution.py": "print('no output')"}, sandbox=sandbox)
    assert missing.kind == "check_failed" and missing.error_type == "FileNotFoundError"
    calls = make_task(
        tmp_path / "calls",
        check='python "$TASK_DIR/check.py"',
        checker="import sys; sys.path.insert(0, '.'); import solution; solution.f()",
    )
    broken = "def f():\n    return undefined_name\n"
    inside = execute(calls, {"solution.py": broken}, sandbox=sandbox)
    assert inside.kind == "runtime_error" and inside.error_type == "NameError"
    # A check that star-imports the candidate meets a name it lacks as its own NameError.
    star = make_task(
        tmp_path / "star",
        check='python "$TASK_DIR/check.py"',
        checker="import sys; sys.path.insert(0, '.')\nfrom solution import *\nmain()\n",
    )
    lacking = execute(star, {"solution.py": "def other():\n    pass\n"}, sandbox=sandbox)
    assert lacking.kind == "check_failed" and lacking.error_type == "NameError"


def test_an_error_raised_in_code_the_check_ran_is_not_the_check_s_defect() -> None:
    # HumanEval's check runs the prompt's helpers ("<prompt>") over the candidate's function:
    # an error opening a task file there is not the check's own.
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/task/check.py", line 40, in <module>\n'
        '  File "/workspace/solution.py", line 7, in load\n'
        "FileNotFoundError: [Errno 2] No such file or directory: '/task/data.json'\n"
    )
    assert check_defect(result(stderr=stderr)) is None  # the candidate's code opened it
    own = stderr.replace('  File "/workspace/solution.py", line 7, in load\n', "")
    assert check_defect(result(stderr=own)) == (
        "$TASK_DIR/check.py:40: FileNotFoundError: [Errno 2] No such file or directory: "
        "'/task/data.json'"
    )
