"""`LocalLLM`: a GGUF model run in-process by llama-cpp-python (the embedded default backend).

The model loads on the first call, once, and is reused; a lock serialises calls because a
llama.cpp context is not thread-safe. Chat formatting uses the template stored in the
GGUF. Structured output is constrained by a grammar built from the pydantic JSON schema,
so the model can only emit JSON of the right shape; pydantic then validates what a
grammar cannot express (ranges, lengths) through the shared repair step.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.errors import BackendError, ModelFileError
from agent.llm.base import Completion, M, Message, Usage
from agent.llm.structured import complete_structured, model_schema, with_schema_instruction

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar
    from llama_cpp.llama_types import ChatCompletionRequestMessage
    from pydantic import BaseModel

_log = logging.getLogger(__name__)


def default_threads() -> int:
    """Half the cores we may run on (at least one): llama.cpp's own rule, but affinity-aware.

    Not all of them: llama.cpp's OpenMP workers spin while they wait, so a thread per core
    collapses as soon as anything else runs. Measured on 2 shared cores (load ~6): 2
    threads 0.6-1.1 tok/s, 1 thread 5-7 tok/s. `OMP_WAIT_POLICY=PASSIVE` in the
    environment (before llama_cpp loads) removes the collapse if you want every core.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // 2)


class LocalLLM:
    """In-process chat completions from a GGUF file via llama-cpp-python."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        repeat_penalty: float = 1.0,
    ) -> None:
        """Nothing is loaded here; the first `complete` pays the load (~0.5-2 s for 0.5B Q4).

        `n_threads` (generation and prompt) defaults to `default_threads()`. `seed` starts a
        per-instance seed sequence: runs repeat exactly, yet two calls at temperature > 0
        still draw different samples. `repeat_penalty=1.0` (off) keeps temperature 0 a
        plain greedy decode, as on OpenAI-compatible servers; code and JSON repeat tokens
        legitimately.
        """
        self._path = Path(model_path)
        self._n_ctx = n_ctx
        self._n_threads = n_threads or default_threads()
        self._seeds = random.Random(seed)
        self._repeat_penalty = repeat_penalty
        self._llama: Llama | None = None
        self._grammars: dict[type[BaseModel], LlamaGrammar | None] = {}
        self._lock = threading.RLock()
        self.load_seconds: float | None = None

    @property
    def model_id(self) -> str:
        """ "local:<gguf file name>"."""
        return f"local:{self._path.name}"

    @property
    def model_path(self) -> Path:
        """The GGUF file this backend runs."""
        return self._path

    def load(self) -> Llama:
        """Load the model now (idempotent); `complete` calls this on first use."""
        with self._lock:
            if self._llama is None:
                import time

                from llama_cpp import Llama

                started = time.perf_counter()
                try:
                    self._llama = Llama(
                        model_path=str(self._path),
                        n_ctx=self._n_ctx,
                        n_threads=self._n_threads,
                        n_threads_batch=self._n_threads,
                        verbose=False,
                    )
                except ValueError as exc:  # llama-cpp-python's "Failed to load model from file"
                    raise ModelFileError(f"llama.cpp cannot load {self._path}: {exc}") from exc
                self.load_seconds = time.perf_counter() - started
            return self._llama

    def close(self) -> None:
        """Free the model's memory; the next call loads it again."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]:
        """One chat completion (greedy unless `temperature` > 0); `schema` adds a grammar."""
        options: dict[str, Any] = {
            "temperature": 0.0 if temperature is None else temperature,
            "max_tokens": max_tokens,
            "seed": seed,
        }
        if schema is None:
            result: Completion[M] = self._create(messages, options)
            return result

        grammar = self._grammar(schema)
        if grammar is None:
            # Unconstrained: the prompt has to carry the shape; repair catches the rest.
            messages = with_schema_instruction(messages, schema)

        def call(turns: Sequence[Message]) -> Completion[Any]:
            return self._create(turns, {**options, "grammar": grammar})

        return complete_structured(call, messages, schema)

    def _grammar(self, schema: type[BaseModel]) -> LlamaGrammar | None:
        """The GBNF grammar for `schema`, cached; None when llama_cpp cannot convert it."""
        with self._lock:
            if schema not in self._grammars:
                from llama_cpp.llama_grammar import LlamaGrammar

                try:
                    self._grammars[schema] = LlamaGrammar.from_json_schema(
                        json.dumps(grammar_schema(model_schema(schema))), verbose=False
                    )
                except (ValueError, KeyError, TypeError, AssertionError, RecursionError) as exc:
                    # The converter signals unsupported schemas with asserts and plain errors.
                    # Fall back to the prompt + validation + repair path, not a failed call.
                    _log.warning("no grammar for %s (%s); output is unconstrained", schema, exc)
                    self._grammars[schema] = None
            return self._grammars[schema]

    def _create(self, messages: Sequence[Message], options: dict[str, Any]) -> Completion[Any]:
        with self._lock:
            llama = self.load()
            if options.get("seed") is None:
                # llama-cpp-python would reuse one derived seed for every call; draw our own.
                options = {**options, "seed": self._seeds.randint(1, 2**31 - 1)}
            try:
                response: Any = llama.create_chat_completion(
                    messages=[_to_llama(m) for m in messages],
                    repeat_penalty=self._repeat_penalty,
                    **options,
                )
            except ValueError as exc:
                # e.g. "Requested tokens (5000) exceed context window of 4096"
                raise BackendError(f"{self.model_id}: {exc}") from exc
        text = response["choices"][0]["message"].get("content") or ""
        raw_usage = response.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(raw_usage.get("prompt_tokens", 0)),
            completion_tokens=int(raw_usage.get("completion_tokens", 0)),
            calls=1,
        )
        return Completion(text=text, usage=usage, model=self.model_id)


def _to_llama(message: Message) -> ChatCompletionRequestMessage:
    # One literal per role so the TypedDict union narrows (a dict comprehension cannot).
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    return {"role": "assistant", "content": message.content}


# Bounded integer ranges up to this size become enums in the grammar.
_MAX_ENUM_RANGE = 101


def grammar_schema(schema: Any) -> Any:
    """`schema` with small bounded integer ranges spelled out as enums.

    llama-cpp-python's schema-to-grammar converter ignores minimum/maximum, and a greedy
    0.5B model asked for a 1-10 score happily writes 100 -- twice, repair included. An enum
    of the allowed values is something the grammar does enforce.
    """
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    node = {key: grammar_schema(value) for key, value in schema.items()}
    if node.get("type") == "integer" and "enum" not in node:
        low = node.get("minimum", _exclusive(node.get("exclusiveMinimum"), 1))
        high = node.get("maximum", _exclusive(node.get("exclusiveMaximum"), -1))
        if isinstance(low, int) and isinstance(high, int) and 0 < high - low + 1 <= _MAX_ENUM_RANGE:
            return {k: v for k, v in node.items() if k != "type"} | {
                "enum": list(range(low, high + 1))
            }
    return node


def _exclusive(bound: Any, step: int) -> int | None:
    return bound + step if isinstance(bound, int) else None
