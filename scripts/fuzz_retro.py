"""Malformed analyses for the retrospective role of scripts/fuzz_roles.py.

A lesson analysis built valid, then corrupted by one of the issue's categories; the
retrospective must turn it into the model's lesson only while it stays valid, and otherwise
into a deterministic draft marked "fallback: model output invalid", never an exception.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.llm.base import Usage
from agent.llm.scripted import ScriptedLLM
from agent.result import RoundRecord, RunResult
from agent.sandbox import Sandbox
from retrospectives.extract import FALLBACK_INVALID, Retrospective
from scripts.fuzz_roles import CATEGORIES, CRASH, GOOD, MEGABYTE, Case, Outcome, _junk

_ANALYSIS = {
    "root_cause": "amount strings carry a currency sign that float() rejects",
    "fix": "write the number itself instead of reading the configuration",
    "applies_when": "programs that only need to write a constant",
}


@st.composite
def analysis_case(draw: st.DrawFn) -> Case:
    """A lesson analysis, corrupted; `may_pass` (accepted as the model's) iff still valid."""
    category = draw(st.sampled_from(CATEGORIES))
    text = json.dumps(_ANALYSIS)
    keeps = True
    if category == "valid":
        reply = text
    elif category == "prose-wrapped":
        reply = "Here is the lesson:\n```json\n" + text + "\n```\nThanks."
    elif category == "truncated mid-fence":
        whole = f"```json\n{text}\n```"
        reply = whole[: draw(st.integers(0, len(whole) - 6))]
        keeps = False
    elif category == "wrong types":
        field = draw(st.sampled_from(sorted(_ANALYSIS)))
        value = draw(st.sampled_from([None, 42, ["a", "b"], {"x": 1}, "", "n/a", "<fix>"]))
        reply = json.dumps({**_ANALYSIS, field: value})
        keeps = False
    elif category == "missing fields":
        field = draw(st.sampled_from(sorted(_ANALYSIS)))
        reply = json.dumps({k: v for k, v in _ANALYSIS.items() if k != field})
        keeps = False
    elif category == "unicode junk":
        reply = draw(_junk) + draw(st.text(max_size=300))
        keeps = False
    elif category == "1 MB answer":
        field = draw(st.sampled_from(sorted(_ANALYSIS)))
        reply = json.dumps({**_ANALYSIS, field: "word " * (MEGABYTE // 5)})  # over max_length
        keeps = False
    elif category == "JSON in JSON":
        reply = json.dumps({"lesson": text})
        keeps = False
    else:
        reply = json.dumps({**_ANALYSIS, "fix": "write the answer to ../../etc/passwd as root"})
    return Case(category=category, reply=reply, may_pass=keeps)


def fixed_once() -> RunResult:
    """A run that failed once and passed after a change: the retrospective's input."""

    def record(n: int, body: str, fb: Feedback) -> RoundRecord:
        return RoundRecord(
            round=n,
            action="generate" if n == 1 else "refine",
            candidate=Candidate(files={"solution.py": body}, text=body),
            checks=(fb,),
            usage=Usage(prompt_tokens=10, completion_tokens=10, calls=1),
            seconds=0.1,
        )

    crash = Feedback(
        kind="runtime_error",
        stage="execution",
        summary="KeyError: 'missing'",
        error_type="KeyError",
        location="solution.py:2",
        key_message="'missing'",
    )
    ok = Feedback(kind="success", stage="execution", summary="check passed")
    return RunResult(
        run_id="run-fuzz",
        task_id="fuzz",
        scope="fuzz",
        goal="Write 42 to out.json",
        passed=True,
        stop_reason="passed",
        rounds=(record(1, CRASH, crash), record(2, GOOD, ok)),
        best_round=2,
        unresolved=(),
        usage=Usage(prompt_tokens=20, completion_tokens=20, calls=2),
        seconds=0.2,
    )


def run_retrospective(case: Case, sandbox: Sandbox | None = None) -> Outcome:
    """The analysis (after one repair) becomes the lesson, or a marked fallback draft."""
    try:
        outcome = Retrospective(ScriptedLLM([case.reply] * 2)).analyse(fixed_once())
    except Exception as exc:  # noqa: BLE001 - an escaping exception is what we count
        return Outcome(role="retrospective", category=case.category, crashed=repr(exc)[:300])
    drafts = outcome.drafts
    untyped = not drafts or any(not (d.symptom and d.root_cause and d.fix) for d in drafts)
    accepted = bool(drafts) and not any(FALLBACK_INVALID in f for f in outcome.fallbacks)
    return Outcome(
        role="retrospective",
        category=case.category,
        passed=accepted,
        false_pass=accepted and not case.may_pass,
        untyped=untyped,
    )
