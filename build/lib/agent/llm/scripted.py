"""`ScriptedLLM`: the test double that ships in the package (like httpx's MockTransport).

Tests and examples build the agent with a script instead of patching our modules:

    llm = ScriptedLLM(['{"passed": true, "score": 9, "feedback": "ok", "issues": []}'])
    llm = ScriptedLLM.by_system({"generator": ["print(1)"], "critic": [PASS, FAIL]})
    llm = ScriptedLLM.cycle([lambda msgs: "echo: " + msgs[-1].content])

Structured calls go through the same `complete_structured` step as the real backends, so
the repair turn and `StructuredOutputError` are testable with plain strings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import cycle as _cycle
from typing import Any

from pydantic import BaseModel

from agent.llm.base import Completion, M, Message, Usage
from agent.llm.structured import complete_structured

Reply = str | Callable[[Sequence[Message]], str]
"""A scripted answer: fixed text, or a function of the conversation (e.g. by system prompt)."""


class ScriptExhaustedError(RuntimeError):
    """The script ran out of replies: a bug in the test, so deliberately not a LessonloopError.

    The loop turns LessonloopErrors into feedback; this one must propagate and fail the test.
    """


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded call: what the code under test sent, and what the script answered."""

    messages: tuple[Message, ...]
    schema: type[BaseModel] | None
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    reply: str

    @property
    def system(self) -> str:
        """The system prompt, or "" when the call had none."""
        return next((m.content for m in self.messages if m.role == "system"), "")


def approx_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: about four characters per token."""
    return (len(text) + 3) // 4


class ScriptedLLM:
    """Answers from a script, in order; records every call in `.calls`."""

    def __init__(
        self, replies: Sequence[Reply], *, model_id: str = "scripted", repeat: bool = False
    ) -> None:
        """`replies` are used in order; with `repeat=True` they cycle forever."""
        self._replies: list[Reply] = list(replies)
        if repeat and not self._replies:
            raise ValueError("ScriptedLLM(repeat=True) needs at least one reply")
        self._repeat = repeat
        self._source = _cycle(self._replies) if repeat else iter(self._replies)
        self._model_id = model_id
        self.calls: list[ScriptedCall] = []

    @classmethod
    def cycle(cls, replies: Sequence[Reply], *, model_id: str = "scripted") -> ScriptedLLM:
        """A script that repeats `replies` forever (never exhausts)."""
        return cls(replies, model_id=model_id, repeat=True)

    @classmethod
    def by_system(
        cls, routes: Mapping[str, Sequence[Reply]], *, model_id: str = "scripted"
    ) -> ScriptedLLM:
        """Answer by role: each key is a substring of the system prompt with its own queue.

        The first key found in the call's system prompt picks the queue, so a generator,
        critic and refiner can each get their own script. A call whose system prompt
        matches no key, or whose queue is empty, raises `ScriptExhaustedError`.
        """
        queues = {key: list(replies) for key, replies in routes.items()}

        def route(messages: Sequence[Message]) -> str:
            system = next((m.content for m in messages if m.role == "system"), "")
            for key, queue in queues.items():
                if key in system:
                    if not queue:
                        raise ScriptExhaustedError(
                            f"ScriptedLLM.by_system: no replies left for {key!r}"
                        )
                    reply = queue.pop(0)
                    return reply if isinstance(reply, str) else reply(messages)
            raise ScriptExhaustedError(
                f"ScriptedLLM.by_system: system prompt matches none of {list(queues)}: "
                f"{system[:200]!r}"
            )

        return cls([route], model_id=model_id, repeat=True)

    @property
    def model_id(self) -> str:
        """The id reported in every Completion ("scripted" unless given)."""
        return self._model_id

    @property
    def remaining(self) -> int | None:
        """Replies not yet used, or None for a repeating script."""
        if self._repeat:
            return None
        return len(self._replies) - len(self.calls)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]:
        """The next scripted reply; with `schema`, parsed and repaired like a real backend."""

        def call(turns: Sequence[Message]) -> Completion[Any]:
            text = self._next(turns)
            self.calls.append(
                ScriptedCall(tuple(turns), schema, temperature, max_tokens, seed, text)
            )
            usage = Usage(
                prompt_tokens=sum(approx_tokens(m.content) for m in turns),
                completion_tokens=approx_tokens(text),
                calls=1,
            )
            return Completion(text=text, usage=usage, model=self._model_id)

        if schema is None:
            result: Completion[M] = call(messages)
            return result
        return complete_structured(call, messages, schema)

    def _next(self, messages: Sequence[Message]) -> str:
        try:
            reply = next(self._source)
        except StopIteration:
            last = messages[-1].content[:200] if messages else ""
            raise ScriptExhaustedError(
                f"ScriptedLLM ran out of replies after {len(self.calls)} call(s); "
                f"the unanswered call ended with: {last!r}"
            ) from None
        return reply if isinstance(reply, str) else reply(list(messages))
