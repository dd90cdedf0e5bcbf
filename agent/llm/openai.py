"""`OpenAICompatibleLLM`: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio through the openai SDK.

Retries and timeouts are the SDK's own (`max_retries` with backoff on 408/409/429/5xx and
connection errors); we only translate what is left into `BackendError`, keeping the cause.

Structured output walks a ladder of `response_format`s, strictest first:
    json_schema         {"type": "json_schema", "json_schema": {..., "strict": true}} (OpenAI,
                        vLLM, llama.cpp's llama-server, Ollama, LM Studio)
    json_object_schema  {"type": "json_object", "schema": {...}}, the schema in the prompt too
                        (llama-cpp-python's server: it grammar-constrains to the schema)
    json_object         {"type": "json_object"}, the schema in the prompt only
A server that rejects a format (400/422, or any error that names `response_format`:
llama-cpp-python's server answers json_schema with a 500 validation error, which the SDK
retries first) gets the next one in the same call. The instance remembers, per schema, the
format that last worked, so later calls skip the doomed requests, and a schema one server
cannot compile does not cost the others their strict format. A request bad for another
reason (a prompt too long) is sent once per rung, then fails without switching. Servers that
accept but ignore `response_format` are covered by the shared parse-and-repair step.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from agent.errors import BackendError
from agent.llm.base import Completion, M, Message, Usage
from agent.llm.structured import complete_structured, model_schema, with_schema_instruction

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import BaseModel

SchemaMode = Literal["json_schema", "json_object_schema", "json_object"]
LADDER: tuple[SchemaMode, ...] = ("json_schema", "json_object_schema", "json_object")

_log = logging.getLogger(__name__)


class OpenAICompatibleLLM:
    """Chat completions against any OpenAI-compatible endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        client: openai.OpenAI | None = None,
    ) -> None:
        """`client` overrides base_url/api_key/timeout/retries (tests, custom transports)."""
        if client is None:
            import openai

            client = openai.OpenAI(
                base_url=base_url,
                api_key=api_key,
                timeout=timeout_s,
                max_retries=max_retries,
            )
        self._client = client
        self._model = model
        # Per schema, the rung that last worked (a server may refuse one schema only).
        self._modes: dict[type[BaseModel], SchemaMode] = {}

    @property
    def model_id(self) -> str:
        """ "openai:<model>", the spec that would resolve to this backend."""
        return f"openai:{self._model}"

    def close(self) -> None:
        """Close the SDK's HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def schema_mode(self, schema: type[BaseModel]) -> SchemaMode:
        """How structured output for `schema` is requested: the rung that last worked."""
        return self._modes.get(schema, LADDER[0])

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[M] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Completion[M]:
        """One chat completion; with `schema`, JSON-constrained, validated and repaired once."""
        options: dict[str, Any] = {"temperature": 0.0 if temperature is None else temperature}
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        if seed is not None:
            options["seed"] = seed
        if schema is None:
            result: Completion[M] = self._create(messages, options)
            return result

        def call(turns: Sequence[Message]) -> Completion[Any]:
            return self._create_structured(turns, schema, options)

        return complete_structured(call, messages, schema)

    def _create_structured(
        self, messages: Sequence[Message], schema: type[BaseModel], options: dict[str, Any]
    ) -> Completion[Any]:
        current = self.schema_mode(schema)
        modes = LADDER[LADDER.index(current) :]
        for mode in modes:
            last = mode == modes[-1]
            turns, fmt = _structured_request(mode, messages, schema)
            try:
                result = self._create(turns, {**options, "response_format": fmt}, fallback=not last)
            except _SchemaRejectedError as rejected:
                _log.warning(
                    "%s rejected response_format %s (%s); trying the next format",
                    self.model_id,
                    mode,
                    rejected.__cause__,
                )
                continue
            if mode != current:
                _log.warning("%s: %s uses %s from now on", self.model_id, schema.__name__, mode)
                self._modes[schema] = mode
            return result
        raise AssertionError("the last format raises instead of being rejected")

    def _create(
        self, messages: Sequence[Message], options: dict[str, Any], *, fallback: bool = False
    ) -> Completion[Any]:
        import openai

        try:
            response = self._client.chat.completions.create(
                model=self._model,
                messages=[_to_openai(m) for m in messages],
                **options,
            )
        except openai.APIStatusError as exc:
            if fallback and _rejects_format(exc):
                raise _SchemaRejectedError from exc
            raise self._backend_error(exc) from exc
        except openai.OpenAIError as exc:
            raise self._backend_error(exc) from exc
        if not response.choices:
            raise BackendError(f"{self.model_id}: the server returned no choices")
        message = response.choices[0].message
        text = message.content if message.content is not None else (message.refusal or "")
        usage = Usage(calls=1)
        if response.usage is not None:
            usage = Usage(
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                calls=1,
            )
        return Completion(text=text, usage=usage, model=response.model or self._model)

    def _backend_error(self, exc: Exception) -> BackendError:
        import openai

        where = f"{self.model_id} at {self._client.base_url}"
        if isinstance(exc, openai.AuthenticationError):
            return BackendError(f"{where}: authentication failed; check OPENAI_API_KEY ({exc})")
        if isinstance(exc, openai.NotFoundError):
            return BackendError(f"{where}: not found; check the model name and base URL ({exc})")
        if isinstance(exc, openai.APIConnectionError):
            return BackendError(
                f"{where}: cannot reach the server ({exc.__class__.__name__}: {exc})"
            )
        return BackendError(f"{where}: {exc.__class__.__name__}: {exc}")


class _SchemaRejectedError(Exception):
    """Internal signal: the server refused the request's response_format."""


def _rejects_format(exc: openai.APIStatusError) -> bool:
    """A refusal of the format: the status that means it, or any error that names the field."""
    return exc.status_code in (400, 422) or "response_format" in str(exc)


def _structured_request(
    mode: SchemaMode, messages: Sequence[Message], schema: type[BaseModel]
) -> tuple[list[Message], dict[str, Any]]:
    """The turns and the `response_format` one rung of the ladder sends."""
    strict = strict_schema(model_schema(schema))
    if mode == "json_schema":
        named = {"name": _schema_name(schema), "schema": strict, "strict": True}
        return list(messages), {"type": "json_schema", "json_schema": named}
    # json_object only promises *some* JSON, so the prompt has to name the shape.
    turns = with_schema_instruction(messages, schema)
    if mode == "json_object_schema":
        return turns, {"type": "json_object", "schema": strict}
    return turns, {"type": "json_object"}


def _to_openai(message: Message) -> ChatCompletionMessageParam:
    # One literal per role so the TypedDict union narrows (a dict comprehension cannot).
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    return {"role": "assistant", "content": message.content}


def _schema_name(schema: type[BaseModel]) -> str:
    # OpenAI allows [a-zA-Z0-9_-]{1,64}; generic models have names like "Page[int]".
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in schema.__name__)
    return name[:64] or "Output"


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a pydantic JSON schema made acceptable to OpenAI's `strict: true` mode.

    Strict mode wants every object closed (`additionalProperties: false`) and every
    property required (defaults still apply when pydantic validates), no `$ref` with
    sibling keys, and no `default: null`.
    """
    root = copy.deepcopy(schema)
    strict: dict[str, Any] = _make_strict(root, root)
    return strict


def _make_strict(node: Any, root: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_make_strict(item, root) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node and len(node) > 1:
        # Inline the target: strict mode rejects "$ref" next to "description" and friends.
        target = _resolve_ref(root, node.pop("$ref"))
        node = {**target, **node}
    for key in ("$defs", "definitions", "properties"):
        if isinstance(node.get(key), dict):
            node[key] = {name: _make_strict(sub, root) for name, sub in node[key].items()}
    for key in ("items", "anyOf", "allOf", "oneOf", "prefixItems"):
        if key in node:
            node[key] = _make_strict(node[key], root)
    if node.get("type") == "object" or "properties" in node:
        node.setdefault("additionalProperties", False)
        node["required"] = list(node.get("properties", {}))
    if "default" in node and node["default"] is None:
        del node["default"]
    return node


def _resolve_ref(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    if not isinstance(node, dict):
        raise ValueError(f"$ref {ref} does not point at a schema object")
    target: dict[str, Any] = copy.deepcopy(node)
    return target
