"""The shared structured-output step: find JSON in model text, validate, repair once, fail typed.

Every backend sends its raw chat call through `complete_structured`, so extraction, the
single repair attempt and the typed error live here once:

    1. call(messages) -> text; extract JSON, validate with pydantic -> done
    2. else call(messages + [bad answer, what was wrong]) -> text; validate -> done
    3. else StructuredOutputError(raw, schema_name, usage of both calls)

Grammar-constrained backends (local) and `response_format` servers (OpenAI) normally pass on
the first call; the repair path is for everything that still slips through (prose around
the JSON, a truncated answer, a value outside a constraint no grammar can express).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agent.errors import StructuredOutputError
from agent.llm.base import Completion, M, Message

# A backend's plain chat call: messages in, text + usage out (`parsed` stays None).
RawCall = Callable[[Sequence[Message]], Completion[Any]]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\r?\n(.*?)```", re.DOTALL)
# Cap what we echo back to the model / into error messages: a runaway answer must not
# blow the context window of the repair call.
_MAX_ECHO = 4_000
# Each candidate costs a json.loads over its span; deeply nested prose-y answers would
# otherwise make a failed parse quadratic.
_MAX_CANDIDATES = 200


class ParseFailure(ValueError):
    """Why a text did not yield a valid instance; the message is what the repair prompt shows."""


def json_candidates(text: str) -> Iterator[str]:
    """Substrings of `text` that may be the JSON answer, most likely first.

    Order: the whole text, then each fenced block, then each balanced ``{...}`` object in
    reading order; at most 200. Candidates need not parse; duplicates are skipped.
    """
    seen: set[str] = set()
    stripped = text.strip()
    for candidate in (
        stripped,
        *(m.group(1).strip() for m in _FENCE.finditer(text)),
        *_balanced_objects(text),
    ):
        if candidate and candidate not in seen:
            seen.add(candidate)
            yield candidate
            if len(seen) >= _MAX_CANDIDATES:
                return


def _balanced_objects(text: str) -> list[str]:
    """Every balanced ``{...}`` span in reading order (outer before nested), in one pass.

    A stack rather than one scan per "{" keeps long answers linear. Quotes only count as
    string delimiters inside braces, so apostrophes and quotes in the prose around the JSON
    do not hide it; an unclosed "{" (truncated output, prose like "a {") is simply skipped.
    """
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            spans.append((stack.pop(), i))
        elif ch == '"' and stack:
            in_string = True
    return [text[a : b + 1] for a, b in sorted(spans)]


def parse_structured(text: str, schema: type[M]) -> M:
    """The first JSON candidate in `text` that validates against `schema`.

    Raises `ParseFailure` describing the most useful problem: the validation errors of the
    first candidate that was valid JSON, else that no JSON object was found.
    """
    first_problem: str | None = None
    for candidate in json_candidates(text):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            first_problem = first_problem or f"expected a JSON object, got {type(data).__name__}"
            continue
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            first_problem = first_problem or _describe(exc)
    if first_problem is None:
        first_problem = "no valid JSON object found in the answer"
    raise ParseFailure(first_problem)


def _describe(exc: ValidationError) -> str:
    """Validation errors as short lines a small model can act on (no pydantic URLs)."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "(root)"
        lines.append(f"- {where}: {err['msg']}")
    return "JSON did not match the schema:\n" + "\n".join(lines)


def model_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a model is shown: pydantic's, without the class docstring.

    A class docstring is written for programmers ("what the model adds to the facts"), and
    a small model copies such prose into its answer; field descriptions stay.
    """
    data = schema.model_json_schema()
    data.pop("description", None)
    return data


def schema_json(schema: type[BaseModel]) -> str:
    """`model_schema` as compact text, for prompts."""
    return json.dumps(model_schema(schema), separators=(",", ":"))


def with_schema_instruction(messages: Sequence[Message], schema: type[BaseModel]) -> list[Message]:
    """`messages` with the schema spelled out in the system prompt.

    For backends that can only promise *some* JSON (json_object mode, an unconstrained
    grammar): without this the model has to guess the field names.
    """
    note = f"Answer with a single JSON object that matches this JSON schema:\n{schema_json(schema)}"
    if messages and messages[0].role == "system":
        head = Message(role="system", content=f"{messages[0].content}\n\n{note}")
        return [head, *messages[1:]]
    # A new system turn goes first: several chat templates refuse a system turn elsewhere.
    return [Message(role="system", content=note), *messages]


def repair_messages(
    messages: Sequence[Message], answer: str, problem: str, schema: type[BaseModel]
) -> list[Message]:
    """The conversation for the repair call: original turns, the bad answer, what was wrong."""
    return [
        *messages,
        Message(role="assistant", content=_clip(answer)),
        Message(
            role="user",
            content=(
                "Your answer could not be used.\n"
                f"{problem}\n\n"
                f"Reply with the corrected JSON object only: no prose, no code fences. "
                f"It must match this JSON schema:\n{schema_json(schema)}"
            ),
        ),
    ]


def complete_structured(
    call: RawCall, messages: Sequence[Message], schema: type[M]
) -> Completion[M]:
    """Run `call`, parse its text as `schema`; on failure repair once, then raise.

    The returned Completion's usage is the sum of both calls when a repair happened, and
    `text` is the answer that was finally parsed. Raises `StructuredOutputError` (carrying
    the raw answer and the usage of both calls) when the repaired answer is still invalid.
    """
    first = call(messages)
    try:
        return Completion(
            first.text, first.usage, first.model, parse_structured(first.text, schema)
        )
    except ParseFailure as failure:
        problem = str(failure)

    second = call(repair_messages(messages, first.text, problem, schema))
    usage = first.usage + second.usage
    try:
        return Completion(second.text, usage, second.model, parse_structured(second.text, schema))
    except ParseFailure as failure:
        raise StructuredOutputError(
            f"{schema.__name__}: the model's answer was still invalid after one repair attempt: "
            f"{_clip(str(failure), 500)}",
            raw=second.text,
            schema_name=schema.__name__,
            usage=usage,
        ) from failure


def _clip(text: str, limit: int = _MAX_ECHO) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} chars cut]"
