"""OpenAICompatibleLLM against a real HTTP server speaking /v1/chat/completions."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent.errors import BackendError, StructuredOutputError
from agent.llm.base import Message
from agent.llm.openai import OpenAICompatibleLLM, strict_schema

Reply = tuple[int, dict[str, Any]]


def chat_reply(content: str, *, prompt_tokens: int = 11, completion_tokens: int = 7) -> Reply:
    return 200, {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_reply(status: int, message: str) -> Reply:
    return status, {"error": {"message": message, "type": "invalid_request_error"}}


@dataclass
class FakeServer:
    """Answers each POST with `respond(request_body)`; records every request body."""

    respond: Callable[[dict[str, Any]], Reply] = lambda body: chat_reply("hello")
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body["_path"] = self.path
            body["_auth"] = self.headers.get("Authorization")
            fake.requests.append(body)
            status, payload = fake.respond(body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("retry-after-ms", "10")  # keep the SDK's retry backoff short
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def llm(server: FakeServer) -> Iterator[OpenAICompatibleLLM]:
    backend = OpenAICompatibleLLM(
        "fake-model", base_url=server.url, api_key="sk-test", timeout_s=5, max_retries=2
    )
    yield backend
    backend.close()


class Critique(BaseModel):
    passed: bool
    score: int = Field(ge=1, le=10)
    issues: list[str] = []


ASK = [Message(role="system", content="You judge."), Message(role="user", content="Judge it.")]
GOOD = '{"passed": true, "score": 8, "issues": []}'


def test_plain_chat(server: FakeServer, llm: OpenAICompatibleLLM) -> None:
    result = llm.complete(ASK, max_tokens=20, seed=4)
    assert result.text == "hello" and result.parsed is None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (11, 7)
    assert result.usage.calls == 1 and result.model == "fake-model"
    (req,) = server.requests
    assert req["_path"] == "/v1/chat/completions"
    assert req["_auth"] == "Bearer sk-test"
    assert req["model"] == "fake-model"
    assert req["messages"] == [
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": "Judge it."},
    ]
    assert (req["temperature"], req["max_tokens"], req["seed"]) == (0.0, 20, 4)
    assert "response_format" not in req
    assert llm.model_id == "openai:fake-model"


def test_structured_uses_strict_json_schema(server: FakeServer, llm: OpenAICompatibleLLM) -> None:
    server.respond = lambda body: chat_reply(GOOD)
    result = llm.complete(ASK, schema=Critique)
    assert result.parsed == Critique(passed=True, score=8)
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Critique" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["passed", "score", "issues"]


def test_rejected_json_schema_falls_back_once_to_json_object_with_the_schema(
    server: FakeServer, llm: OpenAICompatibleLLM
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            return error_reply(400, "response_format json_schema is not supported")
        return chat_reply(f"Here you go: {GOOD}")

    server.respond = respond
    first = llm.complete(ASK, schema=Critique)
    second = llm.complete(ASK, schema=Critique)

    assert first.parsed == second.parsed == Critique(passed=True, score=8)
    kinds = [r["response_format"]["type"] for r in server.requests]
    # One rejected attempt, then json_object with the schema for this and every later call.
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert all("schema" in r["response_format"] for r in server.requests[1:])
    assert llm.schema_mode(Critique) == "json_object_schema"
    fallback = server.requests[1]
    assert fallback["response_format"]["schema"]["required"] == ["passed", "score", "issues"]
    assert fallback["messages"][0]["content"].startswith("You judge.")
    assert '"score"' in fallback["messages"][0]["content"]  # the schema is in the prompt too


def test_a_server_error_that_names_the_format_is_a_rejection(
    server: FakeServer, llm: OpenAICompatibleLLM
) -> None:
    """llama-cpp-python's server answers a json_schema format with a 500 validation error."""
    detail = "1 validation error: ('body', 'response_format', 'type') Input should be 'text'"

    def respond(body: dict[str, Any]) -> Reply:
        if body["response_format"]["type"] == "json_schema":
            return error_reply(500, detail)
        return chat_reply(GOOD)

    server.respond = respond
    assert llm.complete(ASK, schema=Critique).parsed == Critique(passed=True, score=8)
    kinds = [r["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema"] * 3 + ["json_object"]  # the SDK retried the 500 twice
    assert llm.schema_mode(Critique) == "json_object_schema"


def test_a_server_that_refuses_the_schema_key_gets_plain_json_object(
    server: FakeServer, llm: OpenAICompatibleLLM
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        fmt = body["response_format"]
        if fmt["type"] == "json_schema" or "schema" in fmt:
            return error_reply(422, "unknown field")
        return chat_reply(GOOD)

    server.respond = respond
    llm.complete(ASK, schema=Critique)
    llm.complete(ASK, schema=Critique)
    formats = [r["response_format"] for r in server.requests]
    assert [sorted(f) for f in formats] == [["json_schema", "type"], ["schema", "type"]] + [
        ["type"]
    ] * 2
    assert llm.schema_mode(Critique) == "json_object"


def test_a_server_error_about_something_else_is_not_a_rejection(server: FakeServer) -> None:
    server.respond = lambda body: error_reply(500, "out of memory")
    llm = OpenAICompatibleLLM("m", base_url=server.url, api_key="k", timeout_s=5, max_retries=0)
    with pytest.raises(BackendError, match="out of memory"):
        llm.complete(ASK, schema=Critique)
    llm.close()
    assert len(server.requests) == 1 and llm.schema_mode(Critique) == "json_schema"


def test_bad_request_for_other_reasons_does_not_switch_modes(
    server: FakeServer, llm: OpenAICompatibleLLM
) -> None:
    server.respond = lambda body: error_reply(400, "prompt is too long")
    with pytest.raises(BackendError, match="prompt is too long") as info:
        llm.complete(ASK, schema=Critique)
    assert info.value.__cause__ is not None
    assert len(server.requests) == 3  # once per rung
    assert llm.schema_mode(Critique) == "json_schema"


def test_a_lower_rung_failing_otherwise_does_not_switch_modes(server: FakeServer) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if body["response_format"]["type"] == "json_schema":
            return error_reply(400, "response_format json_schema is not supported")
        return error_reply(503, "overloaded")

    server.respond = respond
    llm = OpenAICompatibleLLM("m", base_url=server.url, api_key="k", timeout_s=5, max_retries=0)
    with pytest.raises(BackendError, match="overloaded"):
        llm.complete(ASK, schema=Critique)
    llm.close()
    assert len(server.requests) == 2 and llm.schema_mode(Critique) == "json_schema"


class Other(BaseModel):
    name: str


def test_a_schema_the_server_refuses_does_not_downgrade_the_others(
    server: FakeServer, llm: OpenAICompatibleLLM
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        fmt = body["response_format"]
        if fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Critique":
            return error_reply(400, "Invalid schema for response_format 'Critique'")
        return chat_reply(GOOD if "score" in json.dumps(fmt) else '{"name": "x"}')

    server.respond = respond
    llm.complete(ASK, schema=Critique)
    assert llm.complete(ASK, schema=Other).parsed == Other(name="x")
    assert llm.schema_mode(Critique) == "json_object_schema"
    assert llm.schema_mode(Other) == "json_schema"
    assert server.requests[-1]["response_format"]["type"] == "json_schema"


def test_repair_turn_goes_to_the_server(server: FakeServer, llm: OpenAICompatibleLLM) -> None:
    replies = iter([chat_reply('{"passed": true, "score": 42}'), chat_reply(GOOD)])
    server.respond = lambda body: next(replies)
    result = llm.complete(ASK, schema=Critique)
    assert result.parsed == Critique(passed=True, score=8)
    assert result.usage.calls == 2 and result.usage.prompt_tokens == 22
    assert "less than or equal to 10" in server.requests[1]["messages"][-1]["content"]


def test_still_invalid_raises_structured_output_error(
    server: FakeServer, llm: OpenAICompatibleLLM
) -> None:
    server.respond = lambda body: chat_reply("I cannot comply.")
    with pytest.raises(StructuredOutputError) as info:
        llm.complete(ASK, schema=Critique)
    assert info.value.raw == "I cannot comply." and info.value.schema_name == "Critique"


def test_server_error_is_retried_by_the_sdk(server: FakeServer, llm: OpenAICompatibleLLM) -> None:
    replies = iter([error_reply(500, "boom"), chat_reply("recovered")])
    server.respond = lambda body: next(replies)
    assert llm.complete(ASK).text == "recovered"
    assert len(server.requests) == 2


def test_persistent_server_error_becomes_backend_error(server: FakeServer) -> None:
    server.respond = lambda body: error_reply(503, "overloaded")
    llm = OpenAICompatibleLLM("m", base_url=server.url, api_key="k", timeout_s=5, max_retries=1)
    with pytest.raises(BackendError, match="overloaded") as info:
        llm.complete(ASK)
    llm.close()
    assert len(server.requests) == 2
    assert info.value.__cause__ is not None


def test_auth_failure_says_what_to_check(server: FakeServer, llm: OpenAICompatibleLLM) -> None:
    server.respond = lambda body: error_reply(401, "bad key")
    with pytest.raises(BackendError, match="authentication failed; check OPENAI_API_KEY"):
        llm.complete(ASK)


def test_connection_refused_becomes_backend_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on `port` any more.
    llm = OpenAICompatibleLLM(
        "m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", timeout_s=2, max_retries=0
    )
    with pytest.raises(BackendError, match="cannot reach the server") as info:
        llm.complete(ASK)
    llm.close()
    import openai

    assert isinstance(info.value.__cause__, openai.APIConnectionError)


class Inner(BaseModel):
    name: str = Field(description="who")


class Outer(BaseModel):
    inner: Inner = Field(description="nested with a description next to $ref")
    maybe: str | None = None
    items: list[Inner] = []


def test_strict_schema_closes_objects_and_inlines_described_refs() -> None:
    schema = strict_schema(Outer.model_json_schema())
    assert schema["required"] == ["inner", "maybe", "items"]
    assert schema["additionalProperties"] is False
    inner = schema["properties"]["inner"]
    assert "$ref" not in inner and inner["additionalProperties"] is False
    assert inner["required"] == ["name"]
    assert "default" not in schema["properties"]["maybe"]
    assert schema["$defs"]["Inner"]["additionalProperties"] is False
    # The caller's schema is untouched.
    assert "additionalProperties" not in Outer.model_json_schema()
