"""`lessonloop mcp` end to end: the SDK's own clients against `python -m agent mcp` subprocesses
on a real store (SQLite file + embedded chromadb).

Most tests use the hashing embedder (LESSONLOOP_EMBEDDER=hash) for speed; one runs the
default MiniLM path. The lift written over MCP is read back with `lessonloop lessons show`.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from tests.test_mcp_tools import BOM, CURRENCY

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {
    "recall_lessons",
    "search_lessons",
    "record_lesson",
    "start_run",
    "report_outcome",
    "get_lesson",
    "deprecate_lesson",
}
QUERY = "float() fails on '$1,299.99' in the amount column of invoices.csv"


def _env(embedder: str | None = "hash") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    env["PYTHONPATH"] = str(ROOT)
    if embedder is not None:
        env["LESSONLOOP_EMBEDDER"] = embedder
    return env


@asynccontextmanager
async def stdio_session(
    store: Path | str,
    log: Path,
    embedder: str | None = "hash",
    env: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "mcp", "--memory", str(store)],
        env=_env(embedder) | (env or {}),
        cwd=ROOT,
    )
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call that must succeed; its structured content."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    return result.structured_content


async def call_error(session: ClientSession, name: str, **arguments: Any) -> str:
    """A tool call that must fail as a tool error; its message."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    return _text(result)


def _text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def lessons_show(store: Path, lesson_id: str, embedder: str | None = "hash") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "agent", "lessons", "--memory", str(store)]
        + ["show", lesson_id, "--json"],
        cwd=ROOT,
        env=_env(embedder),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_stdio_tools_end_to_end(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def scenario() -> tuple[str, str]:
        async with stdio_session(store, tmp_path / "server.log") as s:
            listed = await s.list_tools()
            schemas = {t.name: t.input_schema for t in listed.tools}
            outputs = {t.name: (t.output_schema or {}).get("properties", {}) for t in listed.tools}
            assert {"block", "lesson_ids", "lessons"} <= set(outputs["recall_lessons"])
            assert {"action", "reason", "lesson_id", "redacted"} <= set(outputs["record_lesson"])
            assert set(schemas) == TOOLS
            recall = schemas["recall_lessons"]
            assert recall["required"] == ["text", "scope"]
            assert recall["properties"]["limit"]["maximum"] == 50
            assert set(schemas["record_lesson"]["required"]) == {
                "scope",
                "error_type",
                "symptom",
                "root_cause",
                "fix",
            }
            assert schemas["report_outcome"]["properties"]["lesson_ids"]["type"] == "array"
            assert schemas["report_outcome"]["properties"]["passed"]["type"] == "boolean"

            created = await call(s, "record_lesson", scope="billing", **CURRENCY)
            assert created["action"] == "created"
            lesson_id = created["lesson_id"]
            folded = await call(s, "record_lesson", scope="billing", **CURRENCY)
            assert (folded["action"], folded["lesson_id"]) == ("folded", lesson_id)
            secret = await call(
                s,
                "record_lesson",
                scope="billing",
                **BOM,
                evidence="curl -H 'Authorization: Bearer abcdef0123456789abcdef' failed",
            )
            assert secret["action"] == "created" and secret["redacted"] == ["bearer"]
            other = await call(s, "record_lesson", scope="shipping", **BOM)
            assert other["action"] == "created"

            message = await call_error(s, "record_lesson", scope="billing", error_type="x")
            assert "symptom" in message and "Field required" in message
            # Blank is not a scope, an error type or a lesson's text: the schema refuses it.
            for blank in ({"scope": "  "}, {"error_type": "\t"}, {"fix": "\n"}):
                message = await call_error(s, "record_lesson", **{**BOM, "scope": "b", **blank})
                assert "should match pattern" in message, message
            message = await call_error(s, "recall_lessons", text=QUERY, scope="billing", limit=0)
            assert "limit" in message
            # A budget no lesson's block fits in is refused, not answered "nothing close".
            message = await call_error(
                s, "recall_lessons", text=QUERY, scope="billing", token_budget=20
            )
            assert "token_budget" in message and "greater than or equal to 64" in message
            message = await call_error(s, "get_lesson", lesson_id="les_0000000000000000")
            assert "no lesson 'les_0000000000000000'" in message
            assert "Traceback" not in message

            # Scope rules: the BOM lesson of "shipping" never comes back to "billing".
            hits = await s.call_tool(
                "recall_lessons", {"text": BOM["symptom"], "scope": "billing", "limit": 5}
            )
            found = hits.structured_content or {}
            assert other["lesson_id"] not in found["lesson_ids"]
            assert secret["lesson_id"] in found["lesson_ids"]
            assert _text(hits).startswith("Past experience")
            # What did not help is left out: the next lessons take its place.
            rest = await call(
                s,
                "recall_lessons",
                text=BOM["symptom"],
                scope="billing",
                limit=5,
                exclude=[secret["lesson_id"]],
            )
            assert secret["lesson_id"] not in rest["lesson_ids"]
            assert set(rest["lesson_ids"]) == set(found["lesson_ids"]) - {secret["lesson_id"]}
            # The task's data: a lesson about '$' amounts stays out of data that has none.
            for data, expected in (('acme,"$1,299.99"', True), ("acme,1299.99", False)):
                answer = await call(
                    s, "recall_lessons", text=QUERY, scope="billing",
                    data=[f"--- invoices.csv ---\nclient,amount\n{data}"],
                )  # fmt: skip
                assert (lesson_id in answer["lesson_ids"]) is expected

            # A run of an assistant with its own loop: recall, fail, then succeed.
            base = await call(s, "start_run", scope="billing", goal="sum invoices, no lessons")
            await call(s, "report_outcome", run_id=base["run_id"], lesson_ids=[], passed=False)
            run = await call(s, "start_run", scope="billing", goal="sum invoices")
            given = await call(
                s, "recall_lessons", text=QUERY, scope="billing", run_id=run["run_id"]
            )
            assert lesson_id in given["lesson_ids"]
            refused = await call(
                s, "record_lesson", scope="billing", **CURRENCY, run_id=run["run_id"]
            )
            assert refused["action"] == "refused" and lesson_id in refused["reason"]
            done = await call(
                s, "report_outcome", run_id=run["run_id"], lesson_ids=[lesson_id], passed=True
            )
            assert lesson_id in [x["id"] for x in done["lessons"]]
            message = await call_error(
                s, "report_outcome", run_id=run["run_id"], lesson_ids=[], passed=True
            )
            assert "already reported" in message

            detail = await call(s, "get_lesson", lesson_id=lesson_id)
            assert detail["lesson"]["helped"] == 1 and detail["lift"]["runs"] == 1
            assert detail["lift"]["lift"] == 1.0

            top = await s.read_resource("lessonloop://scopes/billing/top")
            text = top.contents[0].text  # type: ignore[union-attr]
            assert "currency sign" in text and "byte order mark" in text
            assert "byte order mark" not in (
                (await s.read_resource("lessonloop://scopes/nowhere/top")).contents[0].text  # type: ignore[union-attr]
            )

            retired = await call(
                s, "deprecate_lesson", lesson_id=secret["lesson_id"], reason="wrong fix"
            )
            assert retired["lesson"]["status"] == "deprecated"
            again = await call(s, "recall_lessons", text=BOM["symptom"], scope="billing")
            assert secret["lesson_id"] not in again["lesson_ids"]
            message = await call_error(
                s, "deprecate_lesson", lesson_id=secret["lesson_id"], reason="twice"
            )
            assert "already deprecated" in message
            return lesson_id, secret["lesson_id"]

    lesson_id, secret_id = anyio.run(scenario)
    # What the server wrote is in the store, as the CLI sees it.
    shown = lessons_show(tmp_path / "store", lesson_id)
    assert shown["lesson"]["helped"] == 1 and shown["lesson"]["seen"] == 2
    assert shown["lift"]["n"] == 1 and shown["lift"]["passed"] == 1
    assert shown["lift"]["baseline_rate"] == 0.0
    masked = lessons_show(tmp_path / "store", secret_id)
    assert masked["lesson"]["status"] == "deprecated"
    excerpts = " ".join(e["excerpt"] for e in masked["lesson"]["evidence"])
    assert "[REDACTED]" in excerpts and "abcdef0123456789" not in excerpts


def test_default_minilm_embedder_over_stdio(tmp_path: Path) -> None:
    """No LESSONLOOP_EMBEDDER: the server loads MiniLM once and recall finds by meaning."""
    store = tmp_path / "store"

    async def scenario() -> tuple[str, list[str], list[str]]:
        async with stdio_session(store, tmp_path / "server.log", embedder=None) as s:
            created = await call(s, "record_lesson", scope="billing", **CURRENCY)
            await call(s, "record_lesson", scope="billing", **BOM)
            # A raw error message sharing few words with the lesson: found by meaning.
            hits = await call(
                s,
                "recall_lessons",
                text="ValueError: could not convert string to float: '$1,299.99'",
                scope="billing",
                error_type="ValueError",
            )
            unrelated = await call(
                s,
                "recall_lessons",
                text="matplotlib legend overlaps the plot title",
                scope="billing",
            )
            return created["lesson_id"], hits["lesson_ids"], unrelated["lesson_ids"]

    lesson_id, hits, unrelated = anyio.run(scenario)
    assert hits[:1] == [lesson_id]
    assert unrelated == []
    shown = lessons_show(store, lesson_id, embedder=None)
    assert "MiniLM" in shown["lesson"]["embedding_model"]


@contextmanager
def http_server(store: Path, *extra: str) -> Iterator[str]:
    """`lessonloop mcp --transport http` on a free loopback port; yields its endpoint URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "mcp", "--transport", "http", "--memory", str(store)]
        + list(extra),
        cwd=ROOT,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        url = None
        while url is None:
            ready, _, _ = select.select([proc.stderr], [], [], 120)
            line = proc.stderr.readline() if ready else ""
            assert line, f"server did not start: {''.join(seen)}"
            seen.append(line)
            match = re.search(r"on (http://\S+/mcp)", line)
            url = match.group(1) if match else None
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def test_streamable_http_on_loopback(tmp_path: Path) -> None:
    with http_server(tmp_path / "store") as url:
        assert url.startswith("http://127.0.0.1:")

        async def scenario() -> None:
            async with http_session(url) as s:
                assert {t.name for t in (await s.list_tools()).tools} == TOOLS
                created = await call(s, "record_lesson", scope="billing", **CURRENCY)
                hits = await call(s, "recall_lessons", text=QUERY, scope="billing")
                assert hits["lesson_ids"] == [created["lesson_id"]]

        anyio.run(scenario)


def test_http_token_is_required_when_set(tmp_path: Path) -> None:
    with http_server(tmp_path / "store", "--token", "s3cret-token") as url:
        request = urllib.request.Request(
            url, data=b"{}", method="POST", headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 401

        async def scenario() -> None:
            async with http_session(url, token="s3cret-token") as s:
                run = await call(s, "start_run", scope="billing")
                assert run["run_id"].startswith("mcp_")

        anyio.run(scenario)


def test_http_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent", "mcp", "--transport", "http", "--host", "0.0.0.0"]
        + ["--memory", str(tmp_path / "store")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "--token" in done.stderr
    assert not (tmp_path / "store").exists()  # refused before the store was opened


@pytest.mark.postgres
@pytest.mark.chroma_server
def test_stdio_on_postgres_and_a_chroma_server(tmp_path: Path) -> None:
    """Server mode: two MCP servers share one store (PostgreSQL + a Chroma server)."""
    from tests.memory.memory_servers import start_chroma, start_postgres

    pg = start_postgres()
    chroma = start_chroma()
    try:
        url = pg.create_database("mcp_e2e")
        shared = {"LESSONLOOP_CHROMA_URL": chroma.url}

        async def scenario() -> None:
            async with (
                stdio_session(url, tmp_path / "a.log", env=shared) as a,
                stdio_session(url, tmp_path / "b.log", env=shared) as b,
            ):
                created = await call(a, "record_lesson", scope="billing", **CURRENCY)
                folded = await call(b, "record_lesson", scope="billing", **CURRENCY)
                assert folded["action"] == "folded"
                assert folded["lesson_id"] == created["lesson_id"]
                run = await call(b, "start_run", scope="billing")
                hits = await call(
                    b, "recall_lessons", text=QUERY, scope="billing", run_id=run["run_id"]
                )
                assert hits["lesson_ids"] == [created["lesson_id"]]
                await call(b, "report_outcome", run_id=run["run_id"], lesson_ids=[], passed=True)
                detail = await call(a, "get_lesson", lesson_id=created["lesson_id"])
                assert detail["lesson"]["helped"] == 1 and detail["lesson"]["seen"] == 2
                # The index, then the database go away: tool errors that say so, no traceback.
                chroma.stop()
                message = await call_error(b, "recall_lessons", text=QUERY, scope="billing")
                assert message.startswith("Error executing tool recall_lessons: the lesson store")
                # A lesson written while the index is away is stored all the same: the
                # message says so and not to write it again (a retry would count it twice).
                message = await call_error(a, "record_lesson", scope="billing", **BOM)
                assert "stored, but the lesson store is behind" in message
                assert "do not write them again" in message and "retry" not in message
                pg.stop()
                message = await call_error(a, "get_lesson", lesson_id=created["lesson_id"])
                assert message.startswith("Error executing tool get_lesson: the lesson store")
                assert "Traceback" not in message

        anyio.run(scenario)
    finally:
        chroma.stop()
        pg.stop()


def test_example_assistant_loop_runs(tmp_path: Path) -> None:
    """The README's example: another agent's loop learns over MCP (default MiniLM embedder)."""
    done = subprocess.run(
        [sys.executable, "examples/assistant_loop.py", str(tmp_path / "store")],
        cwd=ROOT,
        env=_env(embedder=None),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("task A: could not convert string to float")
    assert "lesson created" in lines[0]
    assert lines[2].startswith("task B: passed (first try), used les_")
    assert lines[3].endswith("given to 1 run(s), 1 passed")
