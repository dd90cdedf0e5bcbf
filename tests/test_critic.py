"""Strict verdict parsing: prose-wrapped JSON, invalid JSON, missing fields, hidden issues."""

from __future__ import annotations

import pytest

from agent.critic import Critique, critique_feedback, remaining_issues
from agent.errors import StructuredOutputError
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM

ASK = [Message(role="user", content="review")]


def parse(*replies: str) -> Critique:
    completion = ScriptedLLM(list(replies)).complete(ASK, schema=Critique)
    assert completion.parsed is not None
    return completion.parsed


def test_json_wrapped_in_prose_is_parsed() -> None:
    c = parse(
        'Sure! Here is my review:\n{"passed": true, "score": 9, "feedback": "Good.", '
        '"issues": []}\nHope this helps.'
    )
    assert critique_feedback(c).passed


def test_invalid_json_gets_one_repair_then_a_typed_error() -> None:
    with pytest.raises(StructuredOutputError) as info:
        parse("{passed: yes", "still not json")
    assert info.value.raw and info.value.schema_name == "Critique"


def test_missing_field_is_repaired() -> None:
    c = parse(
        '{"passed": false, "score": 4}',
        '{"passed": false, "score": 4, "feedback": "x", "issues": ["y"]}',
    )
    assert c.issues == ["y"]


@pytest.mark.parametrize(
    "issue",
    [
        "None of the totals are rounded to 2 decimals",
        "No rounding applied to averages",
        "Not handling the BOM in the header",
        "无法处理货币符号",  # "cannot handle currency symbols": starts with 无 but is a problem
        "no major gaps, but day 3 lacks a budget",
    ],
)
def test_issue_starting_with_a_negation_is_still_an_issue(issue: str) -> None:
    fb = critique_feedback(Critique(passed=True, score=9, feedback="fine", issues=[issue]))
    assert not fb.passed and fb.issues == (issue,)


@pytest.mark.parametrize(
    "empty",
    [
        "None",
        "none.",
        "No issues",
        "No issues found.",
        "N/A",
        "无",
        "没有问题",
        "",
        "  ",
        "no major issues",
    ],
)
def test_empty_issue_entries_do_not_block_a_pass(empty: str) -> None:
    fb = critique_feedback(Critique(passed=True, score=9, feedback="All good.", issues=[empty]))
    assert fb.passed


def test_problem_in_passing_feedback_text_is_an_issue() -> None:
    c = Critique(
        passed=True,
        score=8,
        feedback="No major gaps. However, the budget for day 3 is missing.",
        issues=[],
    )
    assert remaining_issues(c) == ("However, the budget for day 3 is missing.",)
    assert critique_feedback(c).kind == "critic_rejected"


def test_failing_verdict_without_issues_is_not_a_pass() -> None:
    fb = critique_feedback(Critique(passed=False, score=3, feedback="weak", issues=[]))
    assert not fb.passed and fb.issues == ()


def test_score_out_of_range_is_rejected() -> None:
    with pytest.raises(StructuredOutputError):
        parse(
            '{"passed": true, "score": 11, "feedback": "", "issues": []}',
            '{"passed": true, "score": 12, "feedback": "", "issues": []}',
        )
