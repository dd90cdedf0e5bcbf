"""run_with_reflection: the loop's stop rules around any callable agent."""

from __future__ import annotations

from collections.abc import Sequence

from agent.critic import Critique
from agent.feedback import Feedback
from agent.llm.scripted import ScriptedLLM
from agent.wrapper import llm_refine, llm_review, run_with_reflection
from tests.helpers import critique


def test_wrapper_refines_until_the_review_passes() -> None:
    verdicts = iter(
        [
            Critique(passed=False, score=4, feedback="", issues=["add units"]),
            Critique(passed=True, score=9, feedback="ok", issues=[]),
        ]
    )
    seen: list[tuple[str, Sequence[str]]] = []

    def refine(q: str, a: str, fb: Feedback, tried: Sequence[str]) -> str:
        seen.append((fb.key_message or "", tuple(tried)))
        return a + " km"

    result = run_with_reflection(
        "distance?", lambda q: "42", lambda q, a: next(verdicts), refine, max_rounds=3
    )
    assert result.passed and result.answer == "42 km" and len(result.steps) == 2
    assert seen == [("add units", ())]


def test_wrapper_respects_max_rounds_and_returns_best() -> None:
    scores = iter([6, 3])
    result = run_with_reflection(
        "q",
        lambda q: "first",
        lambda q, a: Critique(passed=False, score=next(scores), feedback="", issues=["x"]),
        lambda q, a, fb, tried: "second",
        max_rounds=2,
    )
    assert not result.passed and result.stop_reason == "max_rounds"
    assert result.answer == "first" and result.unresolved == ("x",)


def test_wrapper_stalls_when_refine_returns_the_same_answer() -> None:
    result = run_with_reflection(
        "q",
        lambda q: "same",
        lambda q, a: Critique(passed=False, score=2, feedback="", issues=["wrong"]),
        lambda q, a, fb, tried: "same",
        max_rounds=5,
    )
    assert result.stop_reason == "stall" and len(result.steps) == 1


def test_wrapper_with_llm_review_and_refine() -> None:
    llm = ScriptedLLM.by_system(
        {
            "strict reviewer": [
                critique(False, 5, "", ("missing the capital",)),
                critique(True, 9, "Correct."),
            ],
            "You repair": ["Phenomenon: no capital\nRoot cause: x\nFix: name it\nANSWER: Paris"],
        }
    )
    result = run_with_reflection(
        "Capital of France?", lambda q: "France is in Europe", llm_review(llm), llm_refine(llm)
    )
    assert result.passed and result.answer == "Paris"


def test_wrapper_unreadable_review_is_not_a_pass() -> None:
    llm = ScriptedLLM(["not json", "still not json"])
    result = run_with_reflection(
        "q", lambda q: "a", llm_review(llm), lambda q, a, fb, t: "b", max_rounds=3
    )
    assert not result.passed and result.stop_reason == "no_actionable_issue"
