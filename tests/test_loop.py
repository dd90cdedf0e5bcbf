"""The loop's stop conditions and reflection inputs, with a scripted LLM and the real sandbox."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.container import Limits
from agent.draws import ANCHORED_WHY
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, LoopEvent, ReflectiveAgent
from agent.prompts import EVIDENCE_GUIDANCE, NO_FILES_NOTE, REPEAT_NOTE
from agent.result import RunResult
from agent.sandbox import Sandbox
from agent.task import Task
from memory.render import HEADER, estimate_tokens
from memory.types import Lesson, LessonQuery, NullRecall, RecallStage, ScoredLesson
from tests.helpers import (
    CRASH,
    CRITIC,
    GEN,
    GOOD,
    ONE_DRAW,
    REFINE,
    WRONG,
    code,
    critique,
    fix,
    make_task,
)


def agent_for(llm: ScriptedLLM, tmp_path: Path, **config: object) -> ReflectiveAgent:
    return ReflectiveAgent(
        llm,
        recall=NullRecall(),
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(**{"pool_size": 1, "first_pool": 1, **config}),  # type: ignore[arg-type]
        runs_dir=tmp_path / "runs",
    )


def test_passes_in_first_round_without_reflection(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(GOOD)]})
    result = agent_for(llm, tmp_path).run(make_task(tmp_path))
    assert result.passed and result.stop_reason == "passed"
    assert [r.feedback.kind for r in result.rounds] == ["success"]
    assert len(llm.calls) == 1  # no critic when the task has its own check (critic="auto")


def test_runtime_error_is_reflected_and_fixed(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)], REFINE: [fix(GOOD, "use the right key")]})
    events: list[LoopEvent] = []
    agent = agent_for(llm, tmp_path)
    agent.observer = events.append
    result = agent.run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    assert result.rounds[0].feedback.kind == "runtime_error"
    refiner_prompt = llm.calls[1].messages[-1].content
    assert "KeyError" in refiner_prompt and "x = {}['missing']" in refiner_prompt
    assert "Fixes already tried" not in refiner_prompt
    assert result.usage.calls == 2 and result.usage.total_tokens > 0
    assert {e.kind for e in events} >= {"generated", "checked", "stopped"}
    assert (tmp_path / "runs" / result.run_id / "round-1.log").is_file()
    assert result.rounds[1].repaired is None  # round 1's chosen program: `repairs` says it


def test_max_rounds_returns_best_candidate_and_unresolved(tmp_path: Path) -> None:
    # round 1: wrong value (ran), round 2: syntax error (worse), round 3: crash -> best is 1
    llm = ScriptedLLM.by_system(
        {GEN: [code(WRONG)], REFINE: [fix("def broken(:\n  pass", "a"), fix(CRASH, "b")]}
    )
    result = agent_for(llm, tmp_path, max_rounds=3).run(make_task(tmp_path))
    assert not result.passed and result.stop_reason == "max_rounds"
    kinds = [r.feedback.kind for r in result.rounds]
    assert kinds == ["check_failed", "syntax_error", "runtime_error"]
    assert result.best_round == 1 and result.best.files["solution.py"].strip() == WRONG
    assert result.unresolved and "expected 42" in " ".join(result.unresolved)


def test_same_failure_twice_is_a_stall(tmp_path: Path) -> None:
    other_wrong = WRONG.replace("41", "41 ")  # different code, same failure
    llm = ScriptedLLM.by_system({GEN: [code(WRONG)], REFINE: [fix(other_wrong)]})
    result = agent_for(llm, tmp_path, max_rounds=5).run(make_task(tmp_path))
    assert result.stop_reason == "stall" and len(result.rounds) == 2


def test_a_round_that_found_a_new_failure_is_no_stall(tmp_path: Path) -> None:
    # Round 2's best repeats round 1's failure, but its pool also drew a failure not seen
    # before: the search is still moving, so round 3 is drawn (and passes).
    other_wrong = WRONG.replace("41", "41 ")
    llm = ScriptedLLM.by_system(
        {GEN: [code(WRONG)], REFINE: [fix(other_wrong), fix(CRASH), fix(GOOD)]}
    )
    config = {"max_rounds": 5, "pool_size": 2, "resample_attempts": 0}
    result = agent_for(llm, tmp_path, **config).run(make_task(tmp_path))
    assert [r.feedback.kind for r in result.rounds] == ["check_failed", "check_failed", "success"]
    assert [e.kind for e in result.rounds[1].pool] == ["check_failed", "runtime_error"]
    assert result.passed and result.stop_reason == "passed"


def test_a_round_with_only_known_failures_stalls(tmp_path: Path) -> None:
    other_wrong, third = WRONG.replace("41", "41 "), WRONG.replace("41", " 41")
    llm = ScriptedLLM.by_system(
        {GEN: [code(WRONG)], REFINE: [fix(other_wrong), fix(third), fix(GOOD)]}
    )
    config = {"max_rounds": 5, "pool_size": 2, "resample_attempts": 0}
    result = agent_for(llm, tmp_path, **config).run(make_task(tmp_path))
    assert result.stop_reason == "stall" and len(result.rounds) == 2


def test_repeated_answer_is_resampled_hotter_then_a_fresh_generation_then_stalls(
    tmp_path: Path,
) -> None:
    # The third draw would pass, but the request was answered twice with a run program: it is
    # not drawn again (`agent.draws.steer`). With no other base, a fresh generation from the
    # goal and the failure is drawn; it repeats the program too, so the round is empty.
    llm = ScriptedLLM.by_system(
        {GEN: [code(WRONG), code(WRONG)], REFINE: [fix(WRONG)] * 2 + [fix(GOOD)]}
    )
    events: list[LoopEvent] = []
    agent = agent_for(llm, tmp_path, max_rounds=5, resample_attempts=2)
    agent.observer = events.append
    result = agent.run(make_task(tmp_path))
    assert result.stop_reason == "stall" and len(result.rounds) == 1
    refine_temps = [c.temperature for c in llm.calls if REFINE in c.system]
    assert refine_temps == [0.0, 0.8]
    steered = [e.detail for e in events if e.kind == "steered"]
    assert steered == [f"refine_hot: not drawn, {ANCHORED_WHY}"]
    fresh = [c for c in llm.calls if GEN in c.system][1]
    assert fresh.temperature == 0.8
    assert "An earlier attempt at this task failed this check" in fresh.messages[-1].content


def test_a_fresh_generation_follows_a_refiner_anchored_on_its_program(tmp_path: Path) -> None:
    # headers_02 on the 1.5B: every refiner answer repeated the program it was to repair,
    # and the run stopped after one round. The fresh generation is new, and here it passes.
    llm = ScriptedLLM.by_system({GEN: [code(WRONG), code(GOOD)], REFINE: [fix(WRONG)] * 2})
    result = agent_for(llm, tmp_path, max_rounds=3, resample_attempts=2).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    assert [(e.origin, e.kind) for e in result.rounds[1].pool] == [("fresh", "success")]
    assert result.rounds[1].resampled == (
        "refine: repeated round 1 generate",
        "refine_hot: repeated round 1 generate",
    )


def test_an_anchored_request_gives_its_draws_to_the_runner_up(tmp_path: Path) -> None:
    # Round 1: WRONG (best) and CRASH (runner-up). Round 2 plans refine, alt, hot, alt, hot:
    # the best's request is answered twice with WRONG itself, so its last hot draw repairs
    # the runner-up instead, and that one passes.
    a, b = WRONG.replace("41", "40"), WRONG.replace("41", "39")
    llm = ScriptedLLM.by_system(
        {
            GEN: [code(WRONG), code(CRASH)],
            REFINE: [fix(WRONG), fix(a), fix(WRONG), fix(b), fix(GOOD)],
        }
    )
    config = {"pool_size": 3, "first_pool": 2, "resample_attempts": 2}
    result = agent_for(llm, tmp_path, **config).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    turns = refiner_turns(llm)
    assert ["'missing'" in t for t in turns] == [False, True, False, True, True]
    assert REPEAT_NOTE not in turns[4]  # the anchored request's note stays with it
    assert [e.origin for e in result.rounds[1].pool] == ["refine_alt"] * 3
    assert result.rounds[1].steered == ("refine_hot -> refine_alt",)
    # The pass repaired round 1's runner-up: the record keeps it for the console's diff.
    repaired = result.rounds[1].repaired
    assert repaired is not None and repaired.candidate.files["solution.py"].strip() == CRASH
    assert (repaired.round, repaired.feedback.kind) == (1, "runtime_error")
    assert result.attempts == (result.rounds[0], repaired, result.rounds[1])


def refiner_turns(llm: ScriptedLLM) -> list[str]:
    return [c.messages[-1].content for c in llm.calls if REFINE in c.system]


def test_resample_that_changes_the_answer_continues(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(WRONG)], REFINE: [fix(WRONG), fix(GOOD)]})
    result = agent_for(llm, tmp_path).run(make_task(tmp_path))
    assert result.passed and result.rounds[1].resamples == 1
    # What it repeated is on record, for a person reading why a round checked little.
    assert result.rounds[1].resampled == ("refine: repeated round 1 generate",)
    # The draw after the repeat is told it repeated; the first draw was not.
    first, second = refiner_turns(llm)
    assert REPEAT_NOTE not in first and second == f"{first}\n\n{REPEAT_NOTE}"


def test_refiner_reply_without_files_is_resampled(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system(
        {GEN: [code(CRASH)], REFINE: ["The error occurred because the key is missing.", fix(GOOD)]}
    )
    result = agent_for(llm, tmp_path).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2 and result.rounds[1].resamples == 1
    assert result.rounds[1].resampled == ("refine: no output file",)
    first, second = refiner_turns(llm)
    assert NO_FILES_NOTE not in first and second.endswith(NO_FILES_NOTE)


def test_a_repeat_notes_only_its_own_prompt(tmp_path: Path) -> None:
    # Round 2 repairs the best (WRONG) and, every other hot draw, the runner-up (CRASH): the
    # greedy repair of the best repeats it; the runner-up's prompt carries no note, the
    # best's next prompt does.
    third = WRONG.replace("41", "40")
    llm = ScriptedLLM.by_system(
        {
            GEN: [code(WRONG), code(CRASH)],
            REFINE: [fix(WRONG), fix(third), fix(third.replace("40", "39")), fix(GOOD)],
        }
    )
    agent_for(llm, tmp_path, pool_size=3, first_pool=2, resample_attempts=2).run(
        make_task(tmp_path)
    )
    turns = refiner_turns(llm)
    assert [REPEAT_NOTE in t for t in turns] == [False, False, True, False]
    # the best's prompt, the runner-up's (CRASH), the best's again, the runner-up's again
    assert ["'missing'" in t for t in turns] == [False, True, False, True]


def test_a_checked_answer_clears_the_note(tmp_path: Path) -> None:
    # One base all round: a repeat, then a new (failing) answer drawn with the note, then a
    # draw whose last answer was checked: no note, it would be untrue.
    third = WRONG.replace("41", "40")
    llm = ScriptedLLM.by_system({GEN: [code(WRONG)], REFINE: [fix(WRONG), fix(third), fix(GOOD)]})
    agent_for(llm, tmp_path, pool_size=3, resample_attempts=2).run(make_task(tmp_path))
    assert [REPEAT_NOTE in t for t in refiner_turns(llm)] == [False, True, False]


def test_fixes_already_tried_reach_the_next_reflection(tmp_path: Path) -> None:
    third = WRONG.replace("41", "40")
    llm = ScriptedLLM.by_system(
        {GEN: [code(CRASH)], REFINE: [fix(WRONG, "switch to get()"), fix(third, "other")]}
    )
    agent_for(llm, tmp_path, max_rounds=3).run(make_task(tmp_path))
    second_refine = [c for c in llm.calls if REFINE in c.system][1].messages[-1].content
    assert "Fixes already tried" in second_refine and "switch to get()" in second_refine


def test_critic_only_task_stops_at_score_threshold(tmp_path: Path) -> None:
    task = make_task(tmp_path, check=None, output=(), goal="Plan a 3-day trip")
    llm = ScriptedLLM.by_system(
        {GEN: ["Day 1..."], CRITIC: [critique(False, 8, "decent", ("day 3 is thin",))]}
    )
    result = agent_for(llm, tmp_path, score_threshold=8).run(task)
    assert result.stop_reason == "score_threshold" and not result.passed
    assert result.unresolved == ("day 3 is thin",)


def test_no_major_gaps_but_is_not_a_pass(tmp_path: Path) -> None:
    task = make_task(tmp_path, check=None, output=(), goal="Plan a 3-day trip with budgets")
    llm = ScriptedLLM.by_system(
        {
            GEN: ["Day 1 ($100), Day 2 ($80), Day 3"],
            CRITIC: [
                critique(True, 7, "No major gaps, but the budget for day 3 is missing."),
                critique(True, 9, "Complete.", ("None",)),
            ],
            REFINE: [
                "Phenomenon: day 3 budget\nRoot cause: x\nFix: add it\n"
                "ANSWER: D1 $100, D2 $80, D3 $90"
            ],
        }
    )
    result = agent_for(llm, tmp_path).run(task)
    assert result.rounds[0].feedback.kind == "critic_rejected"
    assert "budget for day 3 is missing" in result.rounds[0].feedback.issues[0]
    assert result.passed and result.best.text == "D1 $100, D2 $80, D3 $90"


def test_unreadable_critic_is_a_failed_check_not_a_pass(tmp_path: Path) -> None:
    task = make_task(tmp_path, check=None, output=(), goal="Say hi")
    llm = ScriptedLLM.by_system({GEN: ["hi"], CRITIC: ["looks great!", "still prose"]})
    result = agent_for(llm, tmp_path).run(task)
    assert not result.passed and result.stop_reason == "no_actionable_issue"
    assert result.rounds[0].feedback.kind == "critic_rejected"
    assert result.usage.calls == 3  # generator + critic + its one repair attempt


def test_passing_candidate_is_not_rewritten_without_evidence(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(GOOD)], CRITIC: [critique(False, 5, "meh")]})
    result = agent_for(llm, tmp_path, critic="always").run(make_task(tmp_path))
    assert result.stop_reason == "no_actionable_issue"
    assert not any(REFINE in c.system for c in llm.calls)
    assert [c.stage for c in result.rounds[0].checks] == ["execution", "critic"]


def test_critic_issue_after_passing_check_keeps_behaviour_in_prompt(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system(
        {
            GEN: [code(GOOD)],
            CRITIC: [critique(False, 6, "", ("no docstring",)), critique(True, 9, "ok")],
            REFINE: [fix('"""Writes 42."""\n' + GOOD, "add a docstring")],
        }
    )
    result = agent_for(llm, tmp_path, critic="always").run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    refine_prompt = next(c for c in llm.calls if REFINE in c.system).messages[-1].content
    assert "already passes the automatic checks" in refine_prompt
    assert EVIDENCE_GUIDANCE not in refine_prompt  # the crash quotes nothing of the input


def test_missing_output_file_is_caught_by_rule_check_before_execution(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: ["I would write the file like this."], REFINE: [fix(GOOD)]})
    result = agent_for(llm, tmp_path).run(make_task(tmp_path))
    assert result.rounds[0].checks[0].stage == "rule"
    assert result.rounds[0].feedback.summary == "output file solution.py is missing"
    assert result.passed


def test_a_program_of_only_comments_fails_the_rule_check_and_ranks_below_a_crash(
    tmp_path: Path,
) -> None:
    # It would run, write nothing and get a "check failed" that outranks a crash halfway.
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)], REFINE: [code("# Repair attempt\n")]})
    result = agent_for(llm, tmp_path, max_rounds=2).run(make_task(tmp_path))
    assert result.rounds[1].checks[0].stage == "rule"
    assert result.rounds[1].feedback.summary == "solution.py holds no code, only comments"
    assert not result.passed and result.best_round == 1


class _OneLessonRecall:
    """A Recall that always knows one lesson and records what the loop reports."""

    def __init__(self) -> None:
        now = datetime.now(UTC)
        self.lesson = Lesson(
            id="L1",
            scope="default",
            error_type="KeyError",
            symptom="KeyError on a dict",
            root_cause="assumed key exists",
            fix="use .get with a default",
            created_at=now,
            updated_at=now,
        )
        self.queries: list[LessonQuery] = []
        self.used: list[tuple[str, str, tuple[str, ...]]] = []

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]:
        self.queries.append(query)
        return [ScoredLesson(lesson=self.lesson, similarity=0.8, score=0.8)]

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        self.used.append((run_id, stage, tuple(lesson_ids)))


def test_recall_seeds_generation_and_reflection(tmp_path: Path) -> None:
    recall = _OneLessonRecall()
    # Round 1's control (the generation without lessons) writes the same program: the
    # lesson did not make it worse, so the reflection shows it again.
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)] * 2, REFINE: [fix(GOOD)]})
    agent = ReflectiveAgent(
        llm, recall=recall, sandbox=Sandbox(Limits(cpu_s=10)), config=ONE_DRAW, runs_dir=None
    )
    result = agent.run(make_task(tmp_path), run_id="run-1")
    assert [q.stage for q in recall.queries] == ["seed", "reflection"]
    assert "KeyError" in recall.queries[1].error_types
    assert recall.used == [("run-1", "seed", ("L1",)), ("run-1", "reflection", ("L1",))]
    prompts = [c.messages[-1].content for c in llm.calls]
    assert ["use .get with a default" in p for p in prompts] == [True, False, True]
    assert result.recalled_lesson_ids == ("L1",)


def test_reflection_query_leaves_out_what_the_program_printed(tmp_path: Path) -> None:
    # The refiner sees the program's own lines; recall's query does not (their data
    # symbols would gate the lessons by the program's text, not the input's).
    task = make_task(tmp_path, check='python "$TASK_DIR/check.py"')
    task = task.model_copy(update={"run": "python solution.py"})
    printing = "import json\nprint('Skipping row 1: 12%; $4')\njson.dump(41, open('out.json', 'w'))"
    recall = _OneLessonRecall()
    llm = ScriptedLLM.by_system({GEN: [code(printing)] * 2, REFINE: [fix(GOOD)]})
    config = LoopConfig(pool_size=1, first_pool=1)
    agent = ReflectiveAgent(
        llm, recall=recall, sandbox=Sandbox(Limits(cpu_s=10)), config=config, runs_dir=None
    )
    result = agent.run(task)
    assert result.rounds[0].feedback.program_said == "'Skipping row 1: 12%; $4'"
    assert "Skipping row" in llm.calls[-1].messages[-1].content  # the refiner's prompt
    reflection = recall.queries[-1]
    assert reflection.stage == "reflection" and "Skipping" not in reflection.text


def test_seed_query_is_the_goal_with_input_heads_and_the_datas_profile_as_surface_views(
    tmp_path: Path,
) -> None:
    task = make_task(tmp_path)
    assert task.workspace is not None
    (task.workspace / "amounts.csv").write_text('id,amount\n1,$860.45\n2,"$4,332.59"\n3,$9\n')
    recall = _OneLessonRecall()
    llm = ScriptedLLM.by_system({GEN: [code(GOOD)]})
    sandbox = Sandbox(Limits(cpu_s=10))
    ReflectiveAgent(llm, recall=recall, sandbox=sandbox, config=ONE_DRAW, runs_dir=None).run(task)
    (seed,) = recall.queries
    amounts = '--- amounts.csv ---\nid,amount\n1,$860.45\n2,"$4,332.59"'  # 3 lines
    # The third row shows only in the profile (agent.profile.input_profile).
    profile = (
        "values of column 'amount' in amounts.csv (3 of 3 distinct, varied formats first): "
        "'$860.45', '$4,332.59', '$9'; as numbers: '$860.45' is 860.45, '$4,332.59' is 4332.59, "
        "'$9' is 9 ('.' marks decimals, ',' groups thousands)"
    )
    assert seed.stage == "seed"
    assert seed.surface == (amounts, "--- input.txt ---\n6 7", profile)
    assert seed.text == "\n".join([task.goal, *seed.surface])
    # The data gate judges on the views and on every data symbol of the input.
    assert seed.data == (*seed.surface, "values with data symbols in the input: '$860.45'")


def test_every_recall_carries_the_task_s_data_for_the_data_gate(tmp_path: Path) -> None:
    """A reflection is scored on the failure alone (no surface views) and gated on the
    task's data: a wrong total quotes none of the data's symbols."""
    task = make_task(tmp_path)
    assert task.workspace is not None
    (task.workspace / "amounts.csv").write_text("id,amount\n1,$860.45\n")
    recall = _OneLessonRecall()
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)] * 2, REFINE: [fix(GOOD)]})
    sandbox = Sandbox(Limits(cpu_s=10))
    ReflectiveAgent(llm, recall=recall, sandbox=sandbox, config=ONE_DRAW, runs_dir=None).run(task)
    seed, reflection = recall.queries
    assert reflection.stage == "reflection" and reflection.surface == ()
    assert reflection.data == seed.data and any("$860.45" in v for v in reflection.data)


def test_a_lesson_longer_than_the_budget_reaches_the_prompt_clipped(tmp_path: Path) -> None:
    recall = _OneLessonRecall()
    recall.lesson = recall.lesson.model_copy(update={"symptom": "KeyError 'qty' " * 60})
    llm = ScriptedLLM.by_system({GEN: [code(GOOD)]})
    config = LoopConfig(lesson_token_budget=90, first_pool=1)
    agent = ReflectiveAgent(
        llm, recall=recall, sandbox=Sandbox(Limits(cpu_s=10)), config=config, runs_dir=None
    )
    agent.run(make_task(tmp_path))
    prompt = llm.calls[0].messages[-1].content
    block = prompt[prompt.index(HEADER) :].split("\n\n")[0]
    assert "Fix: use .get with a default" in block and "…" in block
    assert estimate_tokens(block) <= 90


@pytest.mark.parametrize("rounds", [1, 2])
def test_max_rounds_bound_is_exact(tmp_path: Path, rounds: int) -> None:
    wrongs = [WRONG.replace("41", str(n)) for n in range(10)]
    llm = ScriptedLLM.by_system({GEN: [code(wrongs[0])], REFINE: [fix(w) for w in wrongs[1:]]})
    task = make_task(
        tmp_path,
        checker=(
            "import json,sys; v=json.load(open('out.json')); sys.exit(f'got {v}' if v!=42 else 0)"
        ),
    )
    result = agent_for(llm, tmp_path, max_rounds=rounds).run(task)
    assert len(result.rounds) == rounds and result.stop_reason == "max_rounds"


def test_a_crash_then_a_wrong_value_makes_the_later_round_best(tmp_path: Path) -> None:
    # The program that ran and got a value wrong got further than the one that crashed.
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)], REFINE: [fix(WRONG)]})
    result = agent_for(llm, tmp_path, max_rounds=2).run(make_task(tmp_path))
    assert [r.feedback.kind for r in result.rounds] == ["runtime_error", "check_failed"]
    assert result.best_round == 2


def test_round_search_finds_the_fix_the_greedy_refiner_misses(tmp_path: Path) -> None:
    wrong_too = WRONG.replace("41", "40")
    wrong_3 = WRONG.replace("41", "39")
    llm = ScriptedLLM.by_system(
        {
            GEN: [code(CRASH), code(GOOD)],
            REFINE: [fix(WRONG, "guess"), fix(wrong_too, "again"), fix(wrong_3, "once more")],
        }
    )
    result = agent_for(llm, tmp_path, pool_size=4).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    pool = result.rounds[1].pool
    assert [(e.origin, e.kind, e.chosen) for e in pool] == [
        ("refine", "check_failed", False),
        ("refine_hot", "check_failed", False),
        ("refine_hot", "check_failed", False),
        ("fresh", "success", True),
    ]
    assert pool[1].temperature == 0.8 and result.rounds[1].usage.calls == 4
    fresh_prompt = [c for c in llm.calls if GEN in c.system][1].messages[-1].content
    assert "An earlier attempt at this task failed" in fresh_prompt and "KeyError" in fresh_prompt
    assert (tmp_path / "runs" / result.run_id / "round-2-4.log").is_file()


def test_a_pool_of_three_refines_and_draws_no_fresh_generation(tmp_path: Path) -> None:
    # Fresh generations restart and fall into the trap again (0 of 4 measured): a small
    # pool spends its draws on repairs.
    wrong_too = WRONG.replace("41", "40")
    llm = ScriptedLLM.by_system(
        {GEN: [code(CRASH)], REFINE: [fix(WRONG, "guess"), fix(wrong_too, "again"), fix(GOOD)]}
    )
    result = agent_for(llm, tmp_path, pool_size=3).run(make_task(tmp_path))
    assert result.passed
    assert [e.origin for e in result.rounds[1].pool] == ["refine", "refine_hot", "refine_hot"]


SCORED_CHECK = (
    "import json, sys\nv = json.load(open('out.json'))\n"
    "print('value is wrong' if v != 42 else 'ok')\nprint(f'LESSONLOOP_SCORE {v}/42')\n"
    "sys.exit(0 if v == 42 else 1)\n"
)


def writes(value: int) -> str:
    return f"import json\njson.dump({value}, open('out.json', 'w'))"


def test_partial_credit_picks_the_best_candidate_of_a_round(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system(
        {GEN: [code(writes(1))], REFINE: [fix(writes(10)), fix(writes(30)), fix(writes(20))]}
    )
    task = make_task(tmp_path, checker=SCORED_CHECK)
    result = agent_for(llm, tmp_path, pool_size=3, max_rounds=2).run(task)
    assert not result.passed and result.best_round == 2
    pool = result.rounds[1].pool
    assert [e.origin for e in pool] == ["refine", "refine_hot", "refine_hot"]
    assert [round(e.credit or 0, 3) for e in pool] == [round(v / 42, 3) for v in (10, 30, 20)]
    assert result.best.files["solution.py"].strip() == writes(30)
    assert result.rounds[1].feedback.credit == pytest.approx(30 / 42)
    # The score line ranks; it is not what the model is told.
    assert "LESSONLOOP_SCORE" not in result.rounds[1].feedback.compressed()


def test_token_budget_stops_the_search(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)], REFINE: [fix(GOOD)]})
    result = agent_for(llm, tmp_path, token_budget=1).run(make_task(tmp_path))
    assert result.stop_reason == "budget" and len(result.rounds) == 1


def test_token_budget_also_cuts_the_search_inside_a_round(tmp_path: Path) -> None:
    replies = {GEN: [code(CRASH)], REFINE: [fix(writes(1)), fix(writes(2)), fix(writes(3))]}
    unbounded = agent_for(ScriptedLLM.by_system(replies), tmp_path / "a", pool_size=3, max_rounds=2)
    full = unbounded.run(make_task(tmp_path / "a", checker=SCORED_CHECK))
    assert len(full.rounds[1].pool) == 3
    # A budget a little above round 1: the round's first candidate is drawn, then it stops.
    budget = full.rounds[0].usage.total_tokens + 1
    bounded = agent_for(ScriptedLLM.by_system(replies), tmp_path / "b", pool_size=3,
                        max_rounds=3, token_budget=budget)  # fmt: skip
    result = bounded.run(make_task(tmp_path / "b", checker=SCORED_CHECK))
    assert len(result.rounds[1].pool) == 1 and result.stop_reason == "budget"


def test_a_reply_without_files_is_still_checked_when_nothing_else_came(tmp_path: Path) -> None:
    prose = "The key is missing; use get()."
    llm = ScriptedLLM.by_system({GEN: [code(CRASH)], REFINE: [prose, prose, prose]})
    result = agent_for(llm, tmp_path, max_rounds=2, resample_attempts=2).run(make_task(tmp_path))
    assert len(result.rounds) == 2 and result.rounds[1].feedback.stage == "rule"
    # Three replies without files, one of them checked after all: two left unchecked.
    assert result.rounds[1].resampled == ("refine: no output file", "refine_hot: no output file")


def test_hot_samples_also_repair_the_last_rounds_runner_up(tmp_path: Path) -> None:
    seen_bases: list[str] = []

    def repair(messages: Sequence[Message]) -> str:
        prompt = messages[-1].content
        base = next(v for v in ("json.dump(10", "json.dump(5", "x = {}") if v in prompt)
        seen_bases.append(base)
        # Only a repair of the runner-up (value 5) finds the answer.
        return fix(GOOD) if base == "json.dump(5" else fix(writes(10 + len(seen_bases)))

    llm = ScriptedLLM.by_system(
        {
            GEN: [code(CRASH)],
            REFINE: [fix(writes(10)), fix(writes(5)), fix(writes(1)), repair, repair],
        }
    )
    task = make_task(tmp_path, checker=SCORED_CHECK)
    result = agent_for(llm, tmp_path, pool_size=3, max_rounds=3).run(task)
    assert result.passed and len(result.rounds) == 3
    round3 = result.rounds[2].pool
    assert [e.origin for e in round3] == ["refine", "refine_alt"]
    assert seen_bases == ["json.dump(10", "json.dump(5"]


def test_a_round_that_did_worse_is_not_repaired_the_best_round_is(tmp_path: Path) -> None:
    bases: list[str] = []

    def repair(messages: Sequence[Message]) -> str:
        prompt = messages[-1].content
        bases.append(next(v for v in ("json.dump(30", "x = {}") if v in prompt))
        return fix(GOOD) if bases[-1] == "json.dump(30" else fix(writes(2))

    # Round 1 gets 30 of 42; round 2's only draw crashes (worse). Round 3 repairs round 1's
    # program, not round 2's crash, and passes.
    llm = ScriptedLLM.by_system({GEN: [code(writes(30))], REFINE: [fix(CRASH), repair]})
    task = make_task(tmp_path, checker=SCORED_CHECK)
    result = agent_for(llm, tmp_path, max_rounds=3, resample_attempts=0).run(task)
    assert [r.feedback.kind for r in result.rounds] == ["check_failed", "runtime_error", "success"]
    assert bases == ["json.dump(30"]
    assert "(round 1)" in llm.calls[-1].messages[-1].content and result.passed
    assert [r.repairs for r in result.rounds] == [None, 1, 1]
    # Round 1 is repaired a second time: with new seeds, not round 2's again.
    assert [c.seed for c in llm.calls[1:]] == [0, 100]


def test_going_back_to_a_round_brings_its_runner_up_back(tmp_path: Path) -> None:
    bases: list[str] = []

    def repair(messages: Sequence[Message]) -> str:
        prompt = messages[-1].content
        bases.append(next(v for v in ("json.dump(30", "json.dump(20", "x = {}") if v in prompt))
        second = bases.count("json.dump(20") == 2
        return fix(GOOD) if second and bases[-1] == "json.dump(20" else fix(writes(len(bases)))

    # Round 1: 30 (best) and 20 (runner-up) of 42. Round 2 crashes and gets 1 of 42 (worse).
    # Round 3 repairs round 1 again, and its hot sample round 1's runner-up, which passes.
    llm = ScriptedLLM.by_system(
        {GEN: [code(writes(30)), code(writes(20))], REFINE: [fix(CRASH), repair, repair, repair]}
    )
    task = make_task(tmp_path, checker=SCORED_CHECK)
    config = {"max_rounds": 3, "resample_attempts": 0, "first_pool": 2, "pool_size": 2}
    result = agent_for(llm, tmp_path, **config).run(task)
    assert result.passed and [e.origin for e in result.rounds[2].pool] == ["refine", "refine_alt"]
    assert bases == ["json.dump(20", "json.dump(30", "json.dump(20"]


# -- round 1's search -----------------------------------------------------------------------


def test_round_one_samples_hot_until_one_passes(tmp_path: Path) -> None:
    # The greedy program crashes; the first hot sample repeats it (not checked again), the
    # next one is wrong, the third passes and ends the round: no refinement round follows.
    llm = ScriptedLLM.by_system({GEN: [code(CRASH), code(CRASH), code(WRONG), code(GOOD)]})
    result = agent_for(llm, tmp_path, first_pool=4).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 1 and result.best_round == 1
    first = result.rounds[0]
    assert [(e.origin, e.kind, e.chosen) for e in first.pool] == [
        ("generate", "runtime_error", False),
        ("sample", "check_failed", False),
        ("sample", "success", True),
    ]
    assert first.resamples == 1 and first.usage.calls == 4  # the repeat's tokens count
    assert [(c.temperature, c.seed) for c in llm.calls] == [
        (0.0, None),
        (0.8, 1),
        (0.8, 2),
        (0.8, 3),
    ]
    # The failure the pass stands for is the draw nearest to it: the crash (one line to
    # remove), not the wrong value that got further (one line to rewrite: two changed).
    assert result.first_failure is not None
    assert result.first_failure.feedback.kind == "runtime_error"


def test_a_round_one_pass_is_paired_with_the_best_ranked_of_equally_near_draws(
    tmp_path: Path,
) -> None:
    # Both failing draws are one rewritten line away from the pass: the one that got
    # further (the wrong value, not the crash) is what the pass stands for.
    crash = "import json\njson.dump({}['missing'], open('out.json', 'w'))"
    llm = ScriptedLLM.by_system({GEN: [code(crash), code(WRONG), code(GOOD)]})
    result = agent_for(llm, tmp_path, first_pool=3).run(make_task(tmp_path))
    assert result.passed and result.first_failure is not None
    assert result.first_failure.feedback.kind == "check_failed"


def test_a_draw_stopped_by_the_time_limit_stands_for_the_failure_only_when_all_were(
    tmp_path: Path,
) -> None:
    # The timed-out draw is the nearest to the pass (two lines more), the crash three lines
    # away: a timeout says nothing of where its program got, so the crash is the failure.
    hang = GOOD + "\nimport time\nwhile True: time.sleep(0.05)"
    crash = GOOD.replace("import json", "import json\nx = {}['missing']\ny = 1\nz = 2")
    task = make_task(tmp_path).model_copy(update={"timeout_s": 1.0})
    llm = ScriptedLLM.by_system({GEN: [code(hang), code(crash), code(GOOD)]})
    result = agent_for(llm, tmp_path, first_pool=3).run(task)
    assert [e.kind for e in result.rounds[0].pool] == ["timeout", "runtime_error", "success"]
    assert result.first_failure is not None
    assert result.first_failure.feedback.kind == "runtime_error"
    # Only timed-out draws failed: the nearest of them is the failure after all.
    (tmp_path / "again").mkdir()
    llm = ScriptedLLM.by_system({GEN: [code(hang), code(GOOD)]})
    result = agent_for(llm, tmp_path / "again", first_pool=2).run(task)
    assert result.first_failure is not None and result.first_failure.feedback.kind == "timeout"


# A program that meets the input's '$' amounts as a naive one does; one that counts into a
# dict it never set up (a KeyError quoting a value of the input, the program's own bug).
DATA_CRASH = "import json\njson.dump(float(open('amounts.csv').read().split()[1]), open('o', 'w'))"
COUNT_CRASH = (
    "import json\ntotals = {}\ntotals['$860.45'] += 1\njson.dump(42, open('out.json', 'w'))"
)


def data_task(tmp_path: Path) -> Task:
    task = make_task(tmp_path)
    assert task.workspace is not None
    (task.workspace / "amounts.csv").write_text("amount\n$860.45\n")
    return task


def test_round_one_draws_no_sample_after_a_crash_on_the_input(tmp_path: Path) -> None:
    # The greedy program crashed on '$860.45', a value of the input: every fresh program from
    # the same prompt meets the same data, so round 1 draws no sample and the refiner, shown
    # the crash and the value, repairs it.
    llm = ScriptedLLM.by_system(
        {GEN: [code(DATA_CRASH), code(GOOD)], REFINE: [fix(GOOD, "strip the '$'")]}
    )
    result = agent_for(llm, tmp_path, first_pool=4).run(data_task(tmp_path))
    first = result.rounds[0]
    assert first.feedback.kind == "runtime_error"
    assert "$860.45" in (first.feedback.key_message or "")
    assert first.pool == () and first.usage.calls == 1
    assert result.passed and len(result.rounds) == 2 and result.rounds[1].action == "refine"
    # The run records the data symbols its input holds, for the retrospective to check
    # what a lesson says about the data against.
    assert result.input_marks is not None and "$" in result.input_marks
    assert "ufeff" not in result.input_marks


def test_input_marks_name_a_bom_and_are_none_without_input_files(tmp_path: Path) -> None:
    task = make_task(tmp_path / "a")
    assert task.workspace is not None
    (task.workspace / "tags.txt").write_bytes("\ufeffpython\nrust\n".encode())
    llm = ScriptedLLM.by_system({GEN: [code(GOOD)]})
    marks = agent_for(llm, tmp_path / "a").run(task).input_marks
    assert marks is not None and "ufeff" in marks
    bare = make_task(tmp_path / "b")
    assert bare.workspace is not None
    for f in bare.workspace.iterdir():
        f.unlink()
    llm = ScriptedLLM.by_system({GEN: [code(GOOD)]})
    assert agent_for(llm, tmp_path / "b").run(bare).input_marks is None
    # A trajectory written before the field (and before `repairs`) still loads.
    result = agent_for(ScriptedLLM.by_system({GEN: [code(GOOD)]}), tmp_path / "c").run(
        make_task(tmp_path / "c")
    )
    old = result.model_dump(mode="json")
    del old["input_marks"]
    for r in old["rounds"]:
        del r["repairs"]
    assert RunResult.model_validate(old).input_marks is None
    assert [c.seed for c in llm.calls if GEN in c.system] == [None]


@pytest.mark.parametrize("crash", [COUNT_CRASH, "import json\njson.dump(amount, open('o', 'w'))"])
def test_round_one_still_samples_after_the_programs_own_crash(tmp_path: Path, crash: str) -> None:
    # A KeyError on a body value, a NameError on a header's word: another draw may not make
    # that mistake, so round 1 samples.
    llm = ScriptedLLM.by_system({GEN: [code(crash), code(GOOD)]})
    result = agent_for(llm, tmp_path, first_pool=4).run(data_task(tmp_path))
    assert result.rounds[0].pool[0].kind == "runtime_error"
    assert result.passed and len(result.rounds) == 1
    assert [e.origin for e in result.rounds[0].pool] == ["generate", "sample"]


def test_round_one_keeps_the_best_sample_and_refines_it(tmp_path: Path) -> None:
    # Nothing passes in round 1: the sample that ran (a wrong value) outranks the greedy
    # crash, and round 2 repairs it.
    llm = ScriptedLLM.by_system(
        {GEN: [code(CRASH), code(WRONG)], REFINE: [fix(GOOD, "the value is 42")]}
    )
    result = agent_for(llm, tmp_path, first_pool=2).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 2
    assert result.rounds[0].feedback.kind == "check_failed"
    assert [(e.origin, e.chosen) for e in result.rounds[0].pool] == [
        ("generate", False),
        ("sample", True),
    ]
    refine_prompt = next(c for c in llm.calls if REFINE in c.system).messages[-1].content
    assert "41" in refine_prompt  # the wrong value's program is the one repaired


def test_round_one_samples_stop_at_the_token_budget(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(CRASH), code(WRONG), code(GOOD)]})
    task = make_task(tmp_path)
    first_cost = ScriptedLLM.by_system({GEN: [code(CRASH)]})
    budget = agent_for(first_cost, tmp_path, max_rounds=1).run(task).usage.total_tokens
    result = agent_for(llm, tmp_path, first_pool=4, token_budget=budget).run(task)
    # The greedy draw spent the budget: no sample, no refinement.
    assert not result.passed and len(llm.calls) == 1 and result.stop_reason == "budget"


def test_round_one_samples_show_the_lessons_unless_the_control_outranked_them(
    tmp_path: Path,
) -> None:
    def sample_prompts(first: str, control: str) -> list[bool]:
        shutil.rmtree(tmp_path / "task", ignore_errors=True)
        recall = _OneLessonRecall()
        llm = ScriptedLLM.by_system({GEN: [code(first), code(control), code(GOOD)]})
        config = LoopConfig(pool_size=1, first_pool=3)
        agent = ReflectiveAgent(
            llm, recall=recall, sandbox=Sandbox(Limits(cpu_s=10)), config=config, runs_dir=None
        )
        result = agent.run(make_task(tmp_path))
        assert result.passed and len(result.rounds) == 1
        assert [e.origin for e in result.rounds[0].pool] == ["generate", "control", "sample"]
        return ["use .get with a default" in c.messages[-1].content for c in llm.calls]

    # The control crashed where the lesson's program ran: the sample is shown the lesson.
    assert sample_prompts(WRONG, CRASH) == [True, False, True]
    # The control got further than the lesson's program: the lesson misled, the sample is
    # drawn without it.
    assert sample_prompts(CRASH, WRONG) == [True, False, False]
