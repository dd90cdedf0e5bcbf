"""Round 1's control: when the candidate written with seed lessons fails, the same generation
is drawn without them and the better is kept; lessons it outranks misled (scripted LLM, real
sandbox, a real SQLite memory for the lift counters)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agent.app.session import finish_run
from agent.container import Limits
from agent.draws import ANCHORED, plan_draws, steer
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from memory import HashEmbedder, LessonDraft, Memory
from memory.types import LessonQuery, RecallStage, ScoredLesson
from tests.helpers import CRASH, GEN, GOOD, REFINE, WRONG, code, fix, make_task

ADVICE = "skip every row whose value is not a digit"


class _StoredLessonRecall:
    """Hands one stored lesson to every query; reports use to the real memory."""

    def __init__(
        self,
        memory: Memory,
        lesson_id: str,
        answers: tuple[RecallStage, ...] = ("seed", "reflection"),
    ) -> None:
        self.memory, self.lesson_id, self.answers = memory, lesson_id, answers
        self.stages: list[RecallStage] = []

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]:
        self.stages.append(query.stage)
        if query.stage not in self.answers:
            return []
        return [ScoredLesson(lesson=self.memory.get(self.lesson_id), similarity=0.8, score=0.8)]

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        self.memory.report_use(run_id, stage, lesson_ids)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    store = Memory.open(str(tmp_path / "m.sqlite3"), embedder=HashEmbedder())
    yield store
    store.close()


def _lesson(memory: Memory) -> str:
    draft = LessonDraft(
        error_type="ValueError",
        symptom="header row parsed as data",
        root_cause="the first row is a header",
        fix=ADVICE,
    )
    added = memory.add(draft)
    assert added.lesson is not None
    return added.lesson.id


def _agent(llm: ScriptedLLM, recall: _StoredLessonRecall, **config: object) -> ReflectiveAgent:
    return ReflectiveAgent(
        llm,
        recall=recall,
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=LoopConfig(**{"pool_size": 1, "first_pool": 1, **config}),  # type: ignore[arg-type]
    )


def _generator_prompts(llm: ScriptedLLM) -> list[str]:
    return [c.messages[-1].content for c in llm.calls if GEN in c.system]


def test_a_control_that_outranks_the_lessons_keeps_them_out_and_counts_them_misled(
    tmp_path: Path, memory: Memory
) -> None:
    lesson_id = _lesson(memory)
    recall = _StoredLessonRecall(memory, lesson_id)
    # With the lesson the program crashes; without it, it runs and writes a wrong value.
    llm = ScriptedLLM.by_system({GEN: [code(CRASH), code(WRONG)], REFINE: [fix(GOOD)]})
    result = _agent(llm, recall).run(make_task(tmp_path), run_id="r1")
    with_lessons, control = _generator_prompts(llm)
    assert ADVICE in with_lessons and ADVICE not in control
    first = result.rounds[0]
    assert [(e.origin, e.kind, e.chosen) for e in first.pool] == [
        ("generate", "runtime_error", False),
        ("control", "check_failed", True),
    ]
    assert first.candidate.files["solution.py"].strip() == WRONG
    assert result.outranked_lesson_ids == (lesson_id,)
    # The reflection recalled it again, but the refiner was not shown it.
    refiner = next(c.messages[-1].content for c in llm.calls if REFINE in c.system)
    assert recall.stages == ["seed", "reflection"] and ADVICE not in refiner
    assert result.passed and result.summary().outranked_lesson_ids == (lesson_id,)
    finish_run(memory, result)
    after = memory.get(lesson_id)
    assert (after.helped, after.misled) == (0, 1)  # misled although the run passed
    assert {(u.stage, u.outcome) for u in memory.uses(lesson_id)} == {("seed", "outranked")}


class _RankedRecall(_StoredLessonRecall):
    """Hands out the best stored lesson the query does not exclude, as one that fills the
    budget would be: one at a time."""

    def __init__(self, memory: Memory, ranked: Sequence[str]) -> None:
        super().__init__(memory, ranked[0])
        self.ranked, self.queries = list(ranked), list[LessonQuery]()

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]:
        self.queries.append(query)
        left = [i for i in self.ranked if i not in query.exclude]
        return [
            ScoredLesson(lesson=self.memory.get(i), similarity=0.8, score=0.8) for i in left[:1]
        ]


def test_after_the_control_outranks_a_lesson_the_next_one_takes_its_place(
    tmp_path: Path, memory: Memory
) -> None:
    misleading = _lesson(memory)
    other = "strip the currency sign before float()"
    added = memory.add(
        LessonDraft(
            error_type="ValueError", symptom="'$5' in amounts", root_cause="a sign", fix=other
        )
    )
    assert added.lesson is not None
    recall = _RankedRecall(memory, [misleading, added.lesson.id])
    llm = ScriptedLLM.by_system({GEN: [code(CRASH), code(WRONG)], REFINE: [fix(GOOD)]})
    result = _agent(llm, recall).run(make_task(tmp_path), run_id="r3")
    assert result.outranked_lesson_ids == (misleading,)
    seed, reflection = recall.queries
    assert seed.exclude == () and reflection.exclude == (misleading,)
    # The reflection was not left empty-handed: the next lesson reached the refiner.
    refiner = next(c.messages[-1].content for c in llm.calls if REFINE in c.system)
    assert other in refiner and ADVICE not in refiner


def test_a_control_that_passes_makes_round_one_pass(tmp_path: Path, memory: Memory) -> None:
    lesson_id = _lesson(memory)
    llm = ScriptedLLM.by_system({GEN: [code(WRONG), code(GOOD)]})
    result = _agent(llm, _StoredLessonRecall(memory, lesson_id)).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 1
    assert [e.origin for e in result.rounds[0].pool if e.chosen] == ["control"]
    assert result.outranked_lesson_ids == (lesson_id,)


def test_lessons_that_do_better_than_the_control_stay_and_the_control_is_runner_up(
    tmp_path: Path, memory: Memory
) -> None:
    lesson_id = _lesson(memory)
    # With the lesson it runs (wrong value); without it, it crashes. In round 2 the refiner's
    # greedy answers with the lesson (repairing the best) and without it (repairing the best
    # program drawn without lessons: the control) are wrong; the hot sample that repairs the
    # runner-up (the control again) passes.
    wrong = [fix(WRONG.replace("41", n)) for n in ("40", "39")]
    llm = ScriptedLLM.by_system({GEN: [code(WRONG), code(CRASH)], REFINE: [*wrong, fix(GOOD)]})
    agent = _agent(llm, _StoredLessonRecall(memory, lesson_id), pool_size=3, max_rounds=2)
    result = agent.run(make_task(tmp_path), run_id="r2")
    assert result.outranked_lesson_ids == ()
    assert [e.chosen for e in result.rounds[0].pool] == [True, False]
    assert [(e.origin, e.lessons) for e in result.rounds[1].pool] == [
        ("refine", True),
        ("refine_bare", False),
        ("refine_alt", True),
    ]
    refiners = [c.messages[-1].content for c in llm.calls if REFINE in c.system]
    assert [ADVICE in p for p in refiners] == [True, False, True]
    # The lesson-free greedy draw and the alternate sample repair the control.
    assert ["x = {}['missing']" in p for p in refiners] == [False, True, True]
    assert result.passed
    finish_run(memory, result)
    after = memory.get(lesson_id)
    assert (after.helped, after.misled) == (1, 0)


def test_a_refinement_round_draws_without_the_lessons_too(tmp_path: Path, memory: Memory) -> None:
    lesson_id = _lesson(memory)
    # Round 1: the control does worse, the lesson stays. Round 2: the refiner shown the lesson
    # crashes, the same refiner without it passes: the lesson misled.
    llm = ScriptedLLM.by_system(
        {GEN: [code(WRONG), code(CRASH)], REFINE: [fix(CRASH.replace("missing", "m")), fix(GOOD)]}
    )
    agent = _agent(llm, _StoredLessonRecall(memory, lesson_id), pool_size=3, max_rounds=3)
    result = agent.run(make_task(tmp_path), run_id="r3")
    assert result.passed and len(result.rounds) == 2
    assert [(e.lessons, e.kind, e.chosen) for e in result.rounds[1].pool] == [
        (True, "runtime_error", False),
        (False, "success", True),
    ]
    assert result.outranked_lesson_ids == (lesson_id,)
    finish_run(memory, result)
    after = memory.get(lesson_id)
    assert (after.helped, after.misled) == (0, 1)
    outcomes = {(u.stage, u.outcome) for u in memory.uses(lesson_id)}
    assert outcomes == {("seed", "outranked"), ("reflection", "outranked")}


def test_a_control_identical_to_the_lessons_answer_is_not_checked(
    tmp_path: Path, memory: Memory
) -> None:
    lesson_id = _lesson(memory)
    llm = ScriptedLLM.by_system({GEN: [code(WRONG), code(WRONG)], REFINE: [fix(GOOD)]})
    result = _agent(llm, _StoredLessonRecall(memory, lesson_id)).run(make_task(tmp_path))
    first = result.rounds[0]
    assert first.pool == () and first.resamples == 1 and result.outranked_lesson_ids == ()
    assert first.resampled == ("control: repeated round 1 generate",)
    # The repeat's tokens still count, in round 1's cost.
    assert result.usage.calls == 3 and first.usage.calls == 2
    assert result.usage.total_tokens == sum(r.usage.total_tokens for r in result.rounds)


@pytest.mark.parametrize(
    ("replies", "seed_control"), [([code(GOOD)], True), ([code(CRASH)], False)]
)
def test_no_control_when_the_lessons_pass_or_it_is_off(
    tmp_path: Path, memory: Memory, replies: list[str], seed_control: bool
) -> None:
    lesson_id = _lesson(memory)
    llm = ScriptedLLM.by_system({GEN: replies, REFINE: [fix(GOOD)]})
    agent = _agent(llm, _StoredLessonRecall(memory, lesson_id), seed_control=seed_control)
    result = agent.run(make_task(tmp_path))
    assert result.passed and len(_generator_prompts(llm)) == 1
    assert result.rounds[0].pool == ()


def test_with_lessons_the_greedy_refiner_is_drawn_twice_and_hot_samples_alternate() -> None:
    cfg = LoopConfig(pool_size=4, first_pool=1, resample_attempts=0)
    plain = plan_draws(cfg, has_output=True, has_runner_up=False)
    assert plain == [
        ("refine", 0.0, False),
        ("refine_hot", 0.8, False),
        ("refine_hot", 0.8, False),
        ("fresh", 0.8, False),
    ]
    shown = plan_draws(cfg, has_output=True, has_runner_up=False, has_lessons=True)
    assert shown == [
        ("refine", 0.0, True),
        ("refine", 0.0, False),
        ("refine_hot", 0.8, True),
        ("refine_hot", 0.8, False),
        ("fresh", 0.8, True),  # a fresh generation is always shown the lessons
    ]
    # The best was drawn with lessons and another without: the lesson-free greedy draw
    # repairs that other one, with or without lessons in this round.
    bare = plan_draws(cfg, has_output=True, has_runner_up=True, has_lessons=True, has_bare=True)
    assert bare[:2] == [("refine", 0.0, True), ("refine_bare", 0.0, False)]
    none = plan_draws(cfg, has_output=True, has_runner_up=True, has_bare=True)
    assert none[:3] == [
        ("refine", 0.0, False),
        ("refine_bare", 0.0, False),
        ("refine_alt", 0.8, False),
    ]


def test_the_line_without_lessons_is_repaired_when_the_round_recalls_none(
    tmp_path: Path, memory: Memory
) -> None:
    """Seed lessons only: round 1's lessons program ranks first, the control crashes; round 2
    has no lessons, and still repairs the control greedily, as a run without memory would."""
    lesson_id = _lesson(memory)
    recall = _StoredLessonRecall(memory, lesson_id, answers=("seed",))
    llm = ScriptedLLM.by_system(
        {GEN: [code(WRONG), code(CRASH)], REFINE: [fix(WRONG.replace("41", "40")), fix(GOOD)]}
    )
    result = _agent(llm, recall, pool_size=2, max_rounds=2).run(make_task(tmp_path))
    assert [(e.origin, e.lessons, e.chosen) for e in result.rounds[1].pool] == [
        ("refine", False, False),
        ("refine_bare", False, True),
    ]
    refiners = [c.messages[-1].content for c in llm.calls if REFINE in c.system]
    assert ["x = {}['missing']" in p for p in refiners] == [False, True]
    assert not any(ADVICE in p for p in refiners) and result.passed
    # The lesson was not outranked in a pool that showed it: round 1's lessons did better.
    assert result.outranked_lesson_ids == ()


def test_no_bare_draw_when_the_best_was_drawn_without_lessons(
    tmp_path: Path, memory: Memory
) -> None:
    lesson_id = _lesson(memory)
    recall = _StoredLessonRecall(memory, lesson_id, answers=("seed",))
    llm = ScriptedLLM.by_system({GEN: [code(CRASH), code(WRONG)], REFINE: [fix(GOOD)]})
    result = _agent(llm, recall, pool_size=2, max_rounds=2).run(make_task(tmp_path))
    assert [e.origin for e in result.rounds[1].pool] == ["refine"]  # it passed first


def test_on_a_tie_the_control_is_kept_and_the_lessons_are_not_blamed(
    tmp_path: Path, memory: Memory
) -> None:
    lesson_id = _lesson(memory)
    other_crash = CRASH.replace("missing", "absent")
    llm = ScriptedLLM.by_system({GEN: [code(CRASH), code(other_crash)], REFINE: [fix(GOOD)]})
    result = _agent(llm, _StoredLessonRecall(memory, lesson_id)).run(make_task(tmp_path))
    assert [(e.origin, e.chosen) for e in result.rounds[0].pool] == [
        ("generate", False),
        ("control", True),
    ]
    assert "'absent'" in result.rounds[0].candidate.files["solution.py"]
    assert result.outranked_lesson_ids == ()


def test_steer_moves_a_draw_off_an_anchored_request_only() -> None:
    repeats = Counter({("best", True): ANCHORED, ("alt", True): 1})
    everything = {"best", "alt", "bare"}
    # Not anchored: as planned (one repeat is not enough).
    assert steer(("alt", True), repeats, everything) == ("alt", True)
    assert steer(("best", False), repeats, everything) == ("best", False)
    # Anchored: the runner-up first, the lessons shown as planned.
    assert steer(("best", True), repeats, everything) == ("alt", True)
    # The runner-up anchored too: the line without lessons, never shown them.
    repeats[("alt", True)] = ANCHORED
    assert steer(("best", True), repeats, everything) == ("bare", False)
    assert steer(("best", True), repeats, {"best", "alt"}) is None
    repeats[("bare", False)] = ANCHORED
    assert steer(("alt", True), repeats, everything) is None


def test_the_control_as_runner_up_and_bare_line_is_one_request(
    tmp_path: Path, memory: Memory
) -> None:
    """Round 1's lessons program ranks first and the control is both its runner-up and the
    best drawn without lessons: a repeat under either name counts for one request, so once it
    and the best's request were each answered twice with a run program, nothing more is
    asked of the refiner (the fifth answer, a pass, is never asked for); the fresh
    generation drawn then repeats the best too, and the run stalls."""
    lesson_id = _lesson(memory)
    recall = _StoredLessonRecall(memory, lesson_id, answers=("seed",))
    replies = [fix(WRONG), fix(CRASH), fix(CRASH), fix(WRONG), fix(GOOD)]
    llm = ScriptedLLM.by_system({GEN: [code(WRONG), code(CRASH), code(WRONG)], REFINE: replies})
    agent = _agent(llm, recall, pool_size=3, resample_attempts=2, max_rounds=2)
    result = agent.run(make_task(tmp_path))
    refiners = [c.messages[-1].content for c in llm.calls if REFINE in c.system]
    assert ["x = {}['missing']" in p for p in refiners] == [False, True, True, False]
    assert result.stop_reason == "stall" and not result.passed
