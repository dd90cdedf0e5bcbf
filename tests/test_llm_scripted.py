"""ScriptedLLM: the in-package test double."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from agent.errors import LessonloopError
from agent.llm import LLM, Message
from agent.llm.scripted import ScriptedLLM, ScriptExhaustedError


def user(text: str, system: str | None = None) -> list[Message]:
    head = [Message(role="system", content=system)] if system else []
    return [*head, Message(role="user", content=text)]


class Point(BaseModel):
    x: int
    y: int


def test_replies_in_order_and_calls_recorded() -> None:
    llm = ScriptedLLM(["one", "two"])
    first = llm.complete(user("a"), temperature=0.7, max_tokens=5, seed=3)
    second = llm.complete(user("b"))

    assert (first.text, second.text) == ("one", "two")
    assert first.model == "scripted" and first.parsed is None
    assert [c.messages[-1].content for c in llm.calls] == ["a", "b"]
    call = llm.calls[0]
    assert (call.temperature, call.max_tokens, call.seed, call.schema) == (0.7, 5, 3, None)
    assert llm.remaining == 0


def test_usage_is_deterministic() -> None:
    a = ScriptedLLM(["x" * 40]).complete(user("y" * 20))
    b = ScriptedLLM(["x" * 40]).complete(user("y" * 20))
    assert a.usage == b.usage
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.calls) == (5, 10, 1)


def test_running_out_is_a_loud_error_not_feedback() -> None:
    llm = ScriptedLLM(["only"])
    llm.complete(user("1"))
    with pytest.raises(ScriptExhaustedError, match="ran out of replies after 1 call") as info:
        llm.complete(user("second question"))
    assert "second question" in str(info.value)
    # The loop turns LessonloopErrors into feedback; a broken script must not be swallowed.
    assert not isinstance(info.value, LessonloopError)


def test_callable_reply_sees_the_conversation() -> None:
    def echo(messages: Sequence[Message]) -> str:
        return messages[-1].content.upper()

    llm = ScriptedLLM.cycle([echo])
    assert [llm.complete(user(t)).text for t in ("a", "b", "c")] == ["A", "B", "C"]
    assert llm.remaining is None


def test_cycle_repeats() -> None:
    llm = ScriptedLLM.cycle(["p", "q"])
    assert [llm.complete(user("?")).text for _ in range(5)] == ["p", "q", "p", "q", "p"]


def test_by_system_routes_each_role_to_its_own_queue() -> None:
    llm = ScriptedLLM.by_system(
        {
            "generator": ["code v1", "code v2"],
            "critic": ['{"x": 1, "y": 2}', lambda msgs: '{"x": 3, "y": 4}'],
        }
    )
    assert llm.complete(user("go", "You are the generator.")).text == "code v1"
    crit = llm.complete(user("judge", "You are the critic."), schema=Point)
    assert crit.parsed == Point(x=1, y=2)
    assert llm.complete(user("again", "You are the generator.")).text == "code v2"
    assert llm.complete(user("judge", "You are the critic."), schema=Point).parsed == Point(
        x=3, y=4
    )
    assert [c.system for c in llm.calls] == [
        "You are the generator.",
        "You are the critic.",
        "You are the generator.",
        "You are the critic.",
    ]
    with pytest.raises(ScriptExhaustedError, match="no replies left for 'critic'"):
        llm.complete(user("judge", "You are the critic."))
    with pytest.raises(ScriptExhaustedError, match="matches none of"):
        llm.complete(user("?", "You are the refiner."))


def test_structured_repair_goes_through_the_shared_step() -> None:
    llm = ScriptedLLM(['{"x": 1}', '{"x": 1, "y": 2}'])
    result = llm.complete(user("point?"), schema=Point)
    assert result.parsed == Point(x=1, y=2)
    assert len(llm.calls) == 2 and all(c.schema is Point for c in llm.calls)


def test_satisfies_the_protocol() -> None:
    llm: LLM = ScriptedLLM(["ok"], model_id="scripted:test")
    assert llm.model_id == "scripted:test"
    assert llm.complete(user("hi")).model == "scripted:test"


def test_repeat_needs_replies() -> None:
    with pytest.raises(ValueError, match="at least one reply"):
        ScriptedLLM.cycle([])
