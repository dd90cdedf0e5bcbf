"""scripts/bench_transfer.py on a real trap pair with the scripted LLM and the real sandbox.

The script writes a good program only when a lesson is in the prompt, and a program that
crashes on B's money values otherwise, so the case shows whether the lesson reached B and
why each sample failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent.container import Limits
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM
from agent.sandbox import Sandbox
from scripts.bench_retro import TRAPS
from scripts.bench_transfer import pairs, run_case
from tests.helpers import GEN, code

LESSON = json.dumps(
    {
        "root_cause": "Money amounts carry a currency symbol and thousands separators.",
        "fix": "Keep only digits, the point and the sign before float().",
        "applies_when": "CSV money columns exported from spreadsheets",
    }
)
NAIVE = """import csv, json
rows = list(csv.DictReader(open("expenses.csv", encoding="utf-8")))
json.dump({"total": sum(float(r["cost"]) for r in rows)}, open("result.json", "w"))"""


def test_a_case_records_why_each_sample_of_b_failed() -> None:
    a, b = pairs([TRAPS], ["currency"])[0]
    assert b.task_dir is not None
    reference = (b.task_dir / "reference" / "solution.py").read_text(encoding="utf-8")

    def generate(messages: Sequence[Message]) -> str:
        lesson_shown = "Past experience" in messages[-1].content
        return code(reference if lesson_shown else NAIVE)

    llm = ScriptedLLM.by_system({"You write one lesson": [LESSON] * 8, GEN: [generate] * 4})
    case = run_case(a, b, llm, Sandbox(Limits(cpu_s=30)), k=1)

    assert (case.task_b, case.recalled, case.samples) == (b.id, 2, 2)
    assert (case.passed_with, case.passed_without) == (2, 0)
    assert case.outcomes_with == ("success", "success")
    assert all(o.startswith("runtime_error: ValueError: ") for o in case.outcomes_without)
    assert "€" in case.outcomes_without[0]
