"""The LLM protocol, its message/usage types, and the shared structured-output step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

# The default types a call without `schema` as Completion[BaseModel] (parsed stays None);
# without it M is unsolved and mypy asks for an annotation at every plain `complete` call.
M = TypeVar("M", bound=BaseModel, default=BaseModel)


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
        )


@dataclass(frozen=True)
class Completion(Generic[M]):
    """One answer: the raw text, the parsed object when a schema was asked for, and its cost."""

    text: str
    usage: Usage
    model: str
    parsed: M | None = None


class LLM(Protocol):
    """Anything that can answer a chat. Backends: openai.py, local.py, scripted.py."""

    @property
    def model_id(self) -> str: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]: ...
