"""End to end: a task fails then passes, a lesson is learned, and the next task benefits.

Real loop, real sandbox, real SQLite + chromadb store; only the model is scripted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agent.app.session import finish_run
from agent.container import Limits
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from memory.embeddings import HashEmbedder
from memory.render import HEADER
from memory.store import Memory
from retrospectives.errors import UnfinishedRunError
from retrospectives.extract import Retrospective
from retrospectives.learn import AutoConsolidation, learn, maybe_consolidate
from tests.helpers import CRASH, GEN, GOOD, REFINE, code, fix, make_task
from tests.retro.builders import LESSON_SYS, analysis
from tests.retro.test_consolidate import CURRENCY, draft

LESSON = analysis(
    root_cause="writing 42 to out.json read a missing key from an empty dict",
    fix="compute the value directly instead of reading the missing key",
    applies_when="writing a computed number to out.json",
)


def generator(messages: Sequence[Message]) -> str:
    # The trap is avoided exactly when a lesson was handed to the generator.
    return code(GOOD) if HEADER in messages[-1].content else code(CRASH)


def agent(memory: Memory, tmp_path: Path) -> tuple[ReflectiveAgent, ScriptedLLM]:
    llm = ScriptedLLM.by_system({GEN: [generator] * 5, REFINE: [fix(GOOD, "drop the lookup")] * 5})
    return (
        ReflectiveAgent(
            llm,
            recall=memory,
            sandbox=Sandbox(Limits(cpu_s=10)),
            config=LoopConfig(max_rounds=3, pool_size=1, first_pool=1),
            runs_dir=tmp_path / "runs",
        ),
        llm,
    )


def test_a_learned_lesson_is_recalled_and_its_lift_moves(tmp_path: Path) -> None:
    with Memory.in_memory(HashEmbedder(), min_similarity=0.05) as memory:
        retro = Retrospective(ScriptedLLM.by_system({LESSON_SYS: [LESSON]}))
        first_agent, _ = agent(memory, tmp_path)
        first = first_agent.run(make_task(tmp_path / "a"))
        assert first.passed and len(first.rounds) == 2 and first.recalled_lesson_ids == ()
        with pytest.raises(UnfinishedRunError, match="finish it first"):
            learn(first, memory=memory, retrospective=retro)
        finish_run(memory, first)
        learned = learn(first, memory=memory, retrospective=retro)
        (lesson_id,) = learned.created_ids
        lesson = memory.get(lesson_id)
        assert lesson.status == "candidate" and lesson.error_type == "KeyError"
        assert lesson.evidence[0].run_id == first.run_id

        second_agent, _ = agent(memory, tmp_path)
        second = second_agent.run(make_task(tmp_path / "b"))
        assert second.passed and len(second.rounds) < len(first.rounds)
        assert lesson_id in second.recalled_lesson_ids
        finish_run(memory, second)
        report = learn(second, memory=memory, retrospective=retro)
        assert report.added == ()  # passed in round one: nothing new to learn
        assert report.lift.validated == (lesson_id,)
        after = memory.get(lesson_id)
        assert after.helped == 1 and after.recalled == 1 and after.status == "validated"
        (lift,) = memory.lesson_lift([lesson_id])
        assert (lift.n, lift.passed) == (1, 1) and lift.baseline_n == 1
        assert lift.rounds_with == 1 and lift.rounds_without == 2


def test_learn_runs_a_pass_once_enough_lessons_wait(tmp_path: Path) -> None:
    # Write-time dedup off: the near-duplicate lessons are for consolidation to merge.
    with Memory.in_memory(HashEmbedder(), dedup_similarity=1.01) as memory:
        memory.add_many([draft(r, f) for r, f in CURRENCY[:2]])
        auto = AutoConsolidation(every=4, llm=None)
        assert maybe_consolidate(memory, auto) is None  # 2 waiting
        memory.add_many([draft(*CURRENCY[2])])
        retro = Retrospective(ScriptedLLM.by_system({LESSON_SYS: [LESSON]}))
        first_agent, _ = agent(memory, tmp_path)
        result = first_agent.run(make_task(tmp_path / "a"))
        finish_run(memory, result)
        report = learn(result, memory=memory, retrospective=retro, consolidation=auto)
        assert len(report.created_ids) == 1  # the 4th waiting lesson
        assert report.consolidation is not None and report.consolidation.new_lessons == 4
        assert len(report.consolidation.merges) == 1  # the three currency lessons
        assert memory.unprocessed_count() == 0
        # Nothing waits any more: the next call does not start another pass.
        assert maybe_consolidate(memory, auto) is None
        with pytest.raises(ValueError):
            AutoConsolidation(every=0, llm=None)
