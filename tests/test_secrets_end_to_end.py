"""A secret that shows up in a failing run's output never reaches the stored lessons.

The candidate's crash message carries an API key and a database password (as a real
program's log line would); the run fails, then passes; the retrospective writes its lesson
through the memory (scripted model, real sandbox, real store). Neither secret may appear in
any stored text, evidence included, nor in an export.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from agent.app.session import run_with_memory
from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.loop import ReflectiveAgent
from agent.sandbox import Sandbox
from memory import Memory
from memory.export import export_lessons
from tests.helpers import GEN, GOOD, ONE_DRAW, REFINE, code, fix, make_task

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab-cD"
PASSWORD = "hunter2-Tr0ub4dor"
LEAKY = (
    "import json\n"
    f"raise ValueError('cannot reach postgresql://app:{PASSWORD}@db/prod with key {KEY}')\n"
)
LESSON = "You write one lesson"
ANALYSIS = json.dumps(
    {
        "root_cause": f"the connection used key {KEY} and failed before writing out.json",
        "fix": "write out.json without calling the database at all",
        "applies_when": "programs that only need to write a constant",
    }
)


def test_secrets_in_a_run_never_reach_the_memory(tmp_path: Path) -> None:
    llm = ScriptedLLM.by_system(
        {GEN: [code(LEAKY)], REFINE: [fix(GOOD, "write the file directly")], LESSON: [ANALYSIS]}
    )
    memory = Memory.in_memory()
    agent = ReflectiveAgent(
        llm,
        recall=memory,
        sandbox=Sandbox(Limits(cpu_s=10)),
        config=ONE_DRAW,
    )
    session = run_with_memory(agent, make_task(tmp_path), memory, retro_llm=llm)
    assert session.run.passed and [a.action for a in session.lessons] == ["created"]
    out = io.StringIO()
    export_lessons(memory, out)
    stored = out.getvalue()
    assert KEY not in stored and PASSWORD not in stored
    assert "[REDACTED]" in stored  # masked, not dropped: the lesson still reads
    memory.close()
