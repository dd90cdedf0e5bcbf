"""A failure counts as fixed only by a candidate that passed; format slips teach nothing."""

from __future__ import annotations

from pathlib import Path

from agent.candidate import Candidate
from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from memory.types import NullRecall
from retrospectives.change import diff_summary
from retrospectives.extract import Retrospective, extract, tried_fixes
from retrospectives.facts import candidate_diff, failure_steps
from tests.helpers import CRASH, GEN, GOOD, REFINE, WRONG, code, fix, make_task

SWALLOWED = (
    "try:\n" + "\n".join("    " + ln for ln in CRASH.splitlines()) + "\nexcept KeyError:\n    pass"
)


def run(tmp_path: Path, replies: dict[str, list[str]], rounds: int = 3, reduce: int = 8):  # type: ignore[no-untyped-def]
    agent = ReflectiveAgent(
        ScriptedLLM.by_system(replies),
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(max_rounds=rounds, pool_size=1, first_pool=1, reduce_budget=reduce),
    )
    return agent.run(make_task(tmp_path))


def test_error_swallowed_by_a_later_failing_round_is_not_a_fix(tmp_path: Path) -> None:
    result = run(tmp_path, {GEN: [code(CRASH)], REFINE: [fix(SWALLOWED, "wrap in try")]}, 2)
    assert [r.feedback.kind for r in result.rounds] == ["runtime_error", "check_failed"]
    steps = failure_steps(result)
    crash = next(s for s in steps if s.feedback.kind == "runtime_error")
    assert not crash.resolved and crash.diff == ""
    # Nothing passed, so nothing was verified: no lesson at all, not a guessed fix.
    assert extract(result, llm=None) == []


def test_fix_diff_is_taken_from_the_passing_candidate(tmp_path: Path) -> None:
    result = run(tmp_path, {GEN: [code(CRASH)], REFINE: [fix(WRONG, "a"), fix(GOOD, "write 42")]})
    assert result.passed and len(result.rounds) == 3
    crash = next(s for s in failure_steps(result) if s.feedback.kind == "runtime_error")
    # the diff runs from the crashing candidate to the passing one (round 3), not round 2
    assert crash.fixed_in == 3 and crash.fix_note == "write 42"
    assert "-x = {}['missing']" in crash.diff and "41" not in crash.diff


def test_missing_output_file_is_a_format_slip_not_a_lesson(tmp_path: Path) -> None:
    result = run(tmp_path, {GEN: ["I cannot write files."], REFINE: [fix(GOOD)]})
    assert result.rounds[0].feedback.stage == "rule" and result.passed
    assert failure_steps(result) == []
    assert extract(result, llm=None) == []


def test_a_round_one_sample_that_passes_repairs_the_nearest_failing_draw(tmp_path: Path) -> None:
    # Round 1: the greedy program crashes, a sample is wrong, the next sample passes with a
    # debug print beside the fix. Both failures are as near to it (one line rewritten); the
    # pass stands for the wrong one (it got further): the change, reduced to what the pass
    # needed, is learned as a refinement's would be.
    debug = GOOD + "\nprint('debug')"
    crash = "import json\njson.dump({}['missing'], open('out.json', 'w'))"
    agent = ReflectiveAgent(
        # The passing sample carries a "Fix:" line, as a refiner's answer would.
        ScriptedLLM.by_system({GEN: [code(crash), code(WRONG), fix(debug, "write 42")]}),
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(max_rounds=3, pool_size=1, first_pool=3),
    )
    result = agent.run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 1
    assert result.first_failure is not None
    assert result.first_failure.candidate.files["solution.py"].strip() == WRONG
    assert result.verified_base == result.first_failure.candidate.digest()
    assert result.verified_files is not None
    assert result.verified_files["solution.py"].strip() == GOOD  # the print taken back
    (step,) = failure_steps(result)
    assert step.feedback.kind == "check_failed" and step.fixed_in == 1
    assert "-json.dump(41" in step.diff and "+json.dump(42" in step.diff
    assert "debug" not in step.diff
    assert step.fix_note == "write 42" and tried_fixes(result, step) == []  # not tried: it passed
    outcome = Retrospective(None).analyse(result)
    (draft,) = outcome.drafts
    assert "verified change:" in draft.fix and "42" in draft.fix
    assert outcome.summary is None  # one round: no process across rounds to sum up


def test_a_greedy_pass_in_round_one_teaches_nothing(tmp_path: Path) -> None:
    agent = ReflectiveAgent(
        ScriptedLLM.by_system({GEN: [code(GOOD)]}),
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(first_pool=3),
    )
    result = agent.run(make_task(tmp_path))
    assert result.passed and result.first_failure is None and result.verified_files is None
    assert failure_steps(result) == [] and extract(result, llm=None) == []


def test_the_verified_change_is_told_from_the_whole_diff(tmp_path: Path) -> None:
    # A rewrite longer than the step's bounded diff: every name changed, and the one line
    # that did the work comes last, past the cut. The one-line change still finds it.
    # (No reduction: it would take the renames back and leave a short diff.)
    before = "\n".join(f"first_{i} = [{i}]" for i in range(30)) + "\n" + CRASH
    after = "\n".join(f"second_{i} = [{i}]" for i in range(30)) + "\n" + GOOD
    after += "\nopen('audit.log', 'a').write('done')"
    result = run(tmp_path, {GEN: [code(before)], REFINE: [fix(after, "rewrite")]}, 2, reduce=0)
    assert result.passed
    (step,) = failure_steps(result)
    assert "more diff lines" in step.diff and "audit.log" not in step.diff
    assert (
        step.change.startswith("rewrite")
        and "`open('audit.log', 'a').write('done')`" in step.change
    )


def test_a_key_over_several_lines_is_redacted_in_the_diff_and_the_change() -> None:
    body = "MHcCAQEEIBl9xq2Yk3vTqzD0f8fJmW1sQbN4pL7uE6aZrC5hGdTyoAoGCCqGSM49"
    key = f"-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----"
    before = Candidate(files={"solution.py": "KEY = '''x'''\nprint(1)\n"}, text="")
    after = Candidate(files={"solution.py": f"KEY = '''{key}'''\nprint(2)\n"}, text="")
    diff = candidate_diff(before, after, None, 10**6)
    assert "print(2)" in diff and body[:10] not in diff
    assert body[:10] not in diff_summary(diff)
