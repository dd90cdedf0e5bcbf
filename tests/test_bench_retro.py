"""scripts/bench_retro.py: real trajectories from the trap tasks, scored lessons (scripted)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.sandbox import Sandbox
from scripts.bench_retro import TRAPS, main, run_bench, select, trajectory

GOOD = {
    "root_cause": "Money values are text with a currency symbol and thousands separators.",
    "fix": "Strip the symbol, spaces and separators before converting with float().",
    "applies_when": "Reading amounts from CSV files.",
}
UNRELATED = {
    "root_cause": "The loop variable was shadowed by an inner function.",
    "fix": "Rename the inner variable so the outer one keeps its value.",
    "applies_when": "Nested functions in loops.",
}


def test_trajectory_is_a_real_fail_then_pass() -> None:
    (task,) = select(1, [TRAPS / "currency_01_invoices"])
    run = trajectory(task, Sandbox(Limits(cpu_s=30)))
    first, second = run.rounds
    assert first.feedback.kind in ("runtime_error", "check_failed") and second.feedback.passed
    assert first.candidate.files != second.candidate.files


def test_scores_the_model_lesson_against_the_family_cause() -> None:
    tasks = select(1, [TRAPS / "currency_01_invoices", TRAPS / "bom_01_payroll"])
    assert [t.id for t in tasks] == ["bom_01_payroll", "currency_01_invoices"]
    # bom gets the currency lesson (wrong cause), currency gets it too (right cause)...
    llm = ScriptedLLM([json.dumps(GOOD), json.dumps(GOOD)])
    report = run_bench(tasks, llm, Sandbox(Limits(cpu_s=30)), Console(quiet=True))
    bom, currency = report.cases
    assert bom.model_used and currency.model_used
    assert "currency" in bom.root_cause and currency.names_cause
    # ...but the fix also carries the verified change of the real trajectory, so the bom
    # lesson still names its cause: the diff stands next to a wrong explanation.
    assert "verified change:" in bom.fix and "utf-8-sig" in bom.fix and bom.names_cause
    assert report.model_used_rate == 1.0 and report.names_cause_rate == 1.0


def test_a_copy_of_the_prompt_example_counts_as_fallback(tmp_path: Path) -> None:
    copied = {
        "root_cause": "A default list argument is created once and shared by every call.",
        "fix": "Default the argument to None and create a new list inside the function.",
        "applies_when": "Functions that take an optional list or dict argument.",
    }
    script = tmp_path / "script.json"
    # Every structured call gets a repair turn: the copy twice, then give up -> fallback.
    script.write_text(json.dumps([json.dumps(copied)] * 2 + [json.dumps(UNRELATED)]))
    out = tmp_path / "retro.json"
    argv = [str(TRAPS / "currency_01_invoices"), "--model", f"scripted:{script}", "--out", str(out)]
    assert main(argv) == 0
    (case,) = json.loads(out.read_text())["cases"]
    assert not case["model_used"] and case["fallback"].startswith("fallback: model output invalid")
