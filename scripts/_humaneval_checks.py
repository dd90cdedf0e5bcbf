"""A HumanEval problem as a task, and its two checks (both run inside the sandbox).

`build_task` writes a task directory holding only `visible_check.py`, which runs the
docstring's examples (`scripts._humaneval_examples`) on solution.py; the task's goal is the
prompt. `score_hidden` runs the hidden tests (`problem["test"]`) on a candidate in a fresh
sandbox workspace: they never enter the task directory, the prompts or the feedback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.sandbox import Sandbox
from agent.task import Task
from scripts._humaneval_examples import Example, parse_examples

SOLUTION = "solution.py"
VISIBLE_TIMEOUT_S = 10.0
HIDDEN_TIMEOUT_S = 30.0

Problem = Mapping[str, str]

# Shared by both checks: run the prompt (helpers, imports), then solution.py over it. The
# prompt is compiled as "<prompt>": agent.classify takes a relative file name for the
# candidate's own file, and a crash in a prompt helper must not be blamed on solution.py.
_LOADER = """\
import ast, math, sys, traceback

def load(prompt, entry):
    ns = {"__name__": "solution"}
    exec(compile(prompt, "<prompt>", "exec"), ns)
    stub = ns.get(entry)
    with open("solution.py", encoding="utf-8") as f:
        source = f.read()
    try:
        exec(compile(source, "solution.py", "exec"), ns)
    except SystemExit:
        print("solution.py called exit() while being imported")
        sys.exit(1)
    if ns.get(entry) is stub or not callable(ns.get(entry)):
        print(f"solution.py does not define the function {entry}()")
        sys.exit(1)
    return ns
"""

# Output shaped for agent.classify: a crash prints one traceback whose last line names the
# example (it becomes the key message); wrong values print the count first and the failing
# examples last, so the key message is a concrete example and changes when the value does
# (the loop's stall rule compares key messages).
_VISIBLE = (
    _LOADER
    + """
def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and type(a) is type(b) and len(a) == len(b):
        return all(same(x, y) for x, y in zip(a, b))
    return a == b

def short(value):
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."

ns = load(PROMPT, ENTRY)
failures, crashed = [], False
for call, expected_src in EXAMPLES:
    expected = ast.literal_eval(expected_src)
    try:
        actual = eval(call, ns)
    except (Exception, SystemExit) as exc:
        failures.append(f"{call} raised {type(exc).__name__}: {exc}")
        if not crashed:
            crashed = True
            lines = traceback.format_exception(exc)
            lines[-1] = lines[-1].rstrip("\\n") + f"  [in {call}]\\n"
            sys.stderr.write("".join(lines))
        continue
    if not same(actual, expected):
        failures.append(f"{call} returned {short(actual)}, expected {short(expected)}")
if failures:
    print(f"{len(failures)} of {len(EXAMPLES)} docstring examples failed:")
    for line in failures[:3]:
        print(line)
    print(f"LESSONLOOP_SCORE {len(EXAMPLES) - len(failures)}/{len(EXAMPLES)}")
    sys.exit(1)
print(f"all {len(EXAMPLES)} docstring examples passed")
"""
)

HIDDEN_PASSED = "hidden tests passed"
_HIDDEN = (
    _LOADER
    + f"""
ns = load(PROMPT, ENTRY)
exec(compile(TEST, "<hidden_test>", "exec"), ns)
ns["check"](ns[ENTRY])
print({HIDDEN_PASSED!r})
"""
)


def _constants(**values: object) -> str:
    return "".join(f"{name} = {value!r}\n" for name, value in values.items())


def render_visible_check(problem: Problem, examples: Sequence[Example]) -> str:
    pairs = [(e.call, e.expected) for e in examples]
    header = _constants(PROMPT=problem["prompt"], ENTRY=problem["entry_point"], EXAMPLES=pairs)
    return header + _VISIBLE


def render_hidden_check(problem: Problem) -> str:
    header = _constants(
        PROMPT=problem["prompt"], ENTRY=problem["entry_point"], TEST=problem["test"]
    )
    return header + _HIDDEN


def task_goal(problem: Problem) -> str:
    entry = problem["entry_point"]
    return (
        f"Complete the Python function `{entry}` below. Write {SOLUTION}: a complete module "
        f"that defines `{entry}` with exactly the given signature, fully implemented, plus any "
        f"imports and helper functions it needs.\n\n```python\n{problem['prompt'].strip()}\n```"
    )


def build_task(problem: Problem, root: Path) -> tuple[Task, int]:
    """The problem as a task directory holding only the visible check; returns (task, #examples)."""
    examples = parse_examples(problem["prompt"], problem["entry_point"])
    task_dir = root / problem["task_id"].replace("/", "-")
    task_dir.mkdir(parents=True)
    (task_dir / "visible_check.py").write_text(
        render_visible_check(problem, examples), encoding="utf-8"
    )
    task = Task(
        id=problem["task_id"],
        goal=task_goal(problem),
        output=(SOLUTION,),
        check='python "$TASK_DIR/visible_check.py"',
        timeout_s=VISIBLE_TIMEOUT_S,
        scope="humaneval",
        task_dir=task_dir,
    )
    return task, len(examples)


class HiddenScore(BaseModel):
    """The verdict of the hidden tests on one candidate."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    detail: str  # the tail of the output when it failed, for reading the JSON


def score_hidden(sandbox: Sandbox, problem: Problem, code: str | None) -> HiddenScore:
    """Run the hidden tests on `code` in a fresh sandbox workspace (never in this process)."""
    if code is None:
        return HiddenScore(passed=False, detail=f"no {SOLUTION} in the reply")
    result = sandbox.run(
        "python hidden_check.py",
        files={SOLUTION: code, "hidden_check.py": render_hidden_check(problem)},
        workspace=None,
        task_dir=None,
        timeout_s=HIDDEN_TIMEOUT_S,
    )
    # Both: code that calls exit(0) before the tests ran must not pass.
    if result.exit_code == 0 and HIDDEN_PASSED in result.stdout:
        return HiddenScore(passed=True, detail="")
    if result.timed_out:
        return HiddenScore(passed=False, detail=f"timed out after {HIDDEN_TIMEOUT_S:.0f} s")
    tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
    return HiddenScore(passed=False, detail="\n".join(tail)[-500:])


def canonical_passes_visible(sandbox: Sandbox, task: Task, problem: Problem) -> bool:
    """Does the reference solution pass the visible check? (Some docstrings are wrong.)"""
    assert task.check is not None
    result = sandbox.run(
        task.check,
        files={SOLUTION: problem["prompt"] + problem["canonical_solution"]},
        workspace=None,
        task_dir=task.task_dir,
        timeout_s=task.timeout_s,
    )
    return result.exit_code == 0
