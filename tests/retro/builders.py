"""Build RunResult trajectories directly (no loop needed) for retrospective tests."""

from __future__ import annotations

import json

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.llm.base import Usage
from agent.result import RoundRecord, RunResult, StopReason

LESSON_SYS = "You write one lesson"
MERGE_SYS = "You merge lessons"

CRASH = (
    "import json\nrows = [l.split(',') for l in open('in.csv')]\n"
    "total = sum(float(r[1]) for r in rows)"
)
GOOD = (
    "import json\nrows = [l.split(',') for l in open('in.csv')]\n"
    "total = sum(float(r[1].strip().lstrip('$')) for r in rows)"
)

VALUE_ERROR = Feedback(
    kind="runtime_error",
    stage="execution",
    summary="ValueError: could not convert string to float: '$5'",
    error_type="ValueError",
    location="solution.py:3",
    key_message="could not convert string to float: '$5'",
)
WRONG_TOTAL = Feedback(
    kind="check_failed",
    stage="execution",
    summary="AssertionError: expected 12.5, got 12",
    error_type="AssertionError",
    location="check.py:4",
    key_message="expected 12.5, got 12",
    failing_example="total of orders.csv",
)
OK = Feedback(kind="success", stage="execution", summary="check passed")


def candidate(body: str, note: str | None = None, cause: str | None = None) -> Candidate:
    head = ""
    if cause:
        head += f"Root cause: {cause}\n"
    if note:
        head += f"Fix: {note}\n"
    return Candidate(files={"solution.py": body}, text=head + body, fix_note=note)


def record(n: int, cand: Candidate, fb: Feedback, recalled: tuple[str, ...] = ()) -> RoundRecord:
    return RoundRecord(
        round=n,
        action="generate" if n == 1 else "refine",
        candidate=cand,
        checks=(fb,),
        usage=Usage(prompt_tokens=100, completion_tokens=50, calls=1),
        seconds=0.1,
        recalled_lesson_ids=recalled,
    )


def run(
    *records: RoundRecord,
    passed: bool | None = None,
    stop: StopReason | None = None,
    unresolved: tuple[str, ...] = (),
    run_id: str = "run-1",
    scope: str = "demo",
) -> RunResult:
    ok = records[-1].feedback.passed if passed is None else passed
    best = records[-1].round if ok else records[0].round
    return RunResult(
        run_id=run_id,
        task_id="orders",
        scope=scope,
        goal="Sum the amount column of orders.csv and print the total",
        passed=ok,
        stop_reason=stop or ("passed" if ok else "max_rounds"),
        rounds=records,
        best_round=best,
        unresolved=unresolved,
        usage=sum((r.usage for r in records), Usage()),
        seconds=1.0,
    )


def fixed_once(recalled: tuple[str, ...] = (), run_id: str = "run-1") -> RunResult:
    """Round 1 crashes on a currency string; round 2 strips the sign and passes."""
    return run(
        record(1, candidate(CRASH), VALUE_ERROR, recalled),
        record(
            2, candidate(GOOD, "strip the currency sign before float()", "amounts carry '$'"), OK
        ),
        run_id=run_id,
    )


def analysis(
    root_cause: str = "amount strings carry a currency sign that float() rejects",
    fix: str = "strip '$' and spaces before converting amounts with float()",
    applies_when: str = "parsing money columns read from CSV files",
) -> str:
    return json.dumps({"root_cause": root_cause, "fix": fix, "applies_when": applies_when})
