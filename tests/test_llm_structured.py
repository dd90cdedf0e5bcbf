"""The shared structured-output step: extraction, validation, one repair, typed failure."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from agent.errors import StructuredOutputError
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM, approx_tokens
from agent.llm.structured import (
    ParseFailure,
    json_candidates,
    parse_structured,
)


class Verdict(BaseModel):
    """Internal note for programmers: never shown to a model."""

    passed: bool
    score: int = Field(ge=1, le=10)
    issues: list[str] = []


GOOD = '{"passed": true, "score": 9, "issues": []}'
ASK = [Message(role="system", content="You are a critic."), Message(role="user", content="Judge.")]


@pytest.mark.parametrize(
    "text",
    [
        GOOD,
        f"  \n{GOOD}\n",
        f"```json\n{GOOD}\n```",
        f"Here is my verdict:\n```\n{GOOD}\n```\nHope that helps.",
        f"Sure! The verdict is {GOOD} -- let me know.",
        f"I'd say {{not json}} but really: {GOOD}",
        # Braces and quotes inside strings must not end the object early.
        '{"passed": false, "score": 3, "issues": ["missing } brace", "say \\"hi\\""]}',
    ],
)
def test_parse_finds_json_in_raw_fenced_and_prose_text(text: str) -> None:
    verdict = parse_structured(text, Verdict)
    assert isinstance(verdict, Verdict)
    assert 1 <= verdict.score <= 10


def test_parse_picks_envelope_contents_when_outer_object_does_not_validate() -> None:
    verdict = parse_structured('{"verdict": ' + GOOD + "}", Verdict)
    assert verdict.score == 9


def test_parse_reports_validation_errors_of_first_json_candidate() -> None:
    with pytest.raises(ParseFailure, match=r"score: Input should be less than or equal to 10"):
        parse_structured('{"passed": true, "score": 11}', Verdict)


@pytest.mark.parametrize("text", ["no json here", '{"passed": true, "score": ', "[1, 2]", ""])
def test_parse_rejects_text_without_a_valid_object(text: str) -> None:
    with pytest.raises(ParseFailure):
        parse_structured(text, Verdict)


def test_candidates_are_linear_on_long_brace_heavy_text() -> None:
    text = "{" * 50_000 + GOOD
    assert GOOD in list(json_candidates(text))


def test_valid_first_answer_uses_one_call() -> None:
    llm = ScriptedLLM([f"```json\n{GOOD}\n```"])
    result = llm.complete(ASK, schema=Verdict)
    assert result.parsed == Verdict(passed=True, score=9)
    assert result.usage.calls == 1
    assert len(llm.calls) == 1 and llm.calls[0].schema is Verdict


def test_missing_field_is_repaired_with_the_error_sent_back() -> None:
    llm = ScriptedLLM(['{"passed": true}', f"Fixed: {GOOD}"])
    result = llm.complete(ASK, schema=Verdict)

    assert result.parsed == Verdict(passed=True, score=9)
    assert result.text == f"Fixed: {GOOD}"
    # Usage of both calls is summed.
    assert result.usage.calls == 2
    first, second = llm.calls
    assert result.usage.completion_tokens == approx_tokens(first.reply) + approx_tokens(
        second.reply
    )
    # The repair turn: original messages, the bad answer, then the problem as a user turn.
    assert second.messages[: len(ASK)] == tuple(ASK)
    assert second.messages[-2] == Message(role="assistant", content='{"passed": true}')
    repair = second.messages[-1]
    assert repair.role == "user"
    assert "score: Field required" in repair.content
    assert "JSON object only" in repair.content
    assert '"score"' in repair.content  # the schema travels with the request
    # ...without the class docstring: a small model copies such prose into its answer.
    assert "Internal note" not in repair.content


def test_invalid_json_is_repaired() -> None:
    llm = ScriptedLLM(["{passed: yes, score: nine}", GOOD])
    assert llm.complete(ASK, schema=Verdict).parsed == Verdict(passed=True, score=9)
    assert "no valid JSON object" in llm.calls[1].messages[-1].content


def test_still_invalid_after_repair_raises_typed_error_with_usage() -> None:
    llm = ScriptedLLM(["not json", '{"passed": "maybe", "score": 0}'])
    with pytest.raises(StructuredOutputError) as info:
        llm.complete(ASK, schema=Verdict)

    err = info.value
    assert err.schema_name == "Verdict"
    assert err.raw == '{"passed": "maybe", "score": 0}'
    assert "score" in str(err) and "passed" in str(err)
    assert err.usage is not None and err.usage.calls == 2
    assert err.usage.total_tokens == sum(
        approx_tokens(c.reply) + sum(approx_tokens(m.content) for m in c.messages)
        for c in llm.calls
    )
    assert "Verdict" in str(err)


def test_repair_echo_is_clipped_for_runaway_answers() -> None:
    llm = ScriptedLLM(["x" * 50_000, GOOD])
    llm.complete(ASK, schema=Verdict)
    echoed = llm.calls[1].messages[-2].content
    assert len(echoed) < 5_000 and echoed.endswith("chars cut]")
