"""The OpenAI-compatible backend against a real server: llama-cpp-python's own, started here.

The fake server of tests/test_llm_openai.py says what the backend sends; this says that a
server users run offline (`python -m llama_cpp.server`, the dev extra installs it) serves
every role: structured output (it refuses `json_schema` with a 500 and is grammar-bound
by `{"type": "json_object", "schema": ...}`), a teacher writing a run's lesson, a worker
running the loop. The bundled 0.5B model keeps it quick.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.app.settings import Settings
from agent.llm import Message
from agent.llm.local import default_threads
from agent.llm.model_file import QWEN_CODER_05B, bundled_model_path
from agent.llm.openai import OpenAICompatibleLLM
from retrospectives.extract import FALLBACK_UNAVAILABLE, LessonAnalysis
from tests.helpers import GEN, REFINE, code, fix
from tests.test_cli_run import BOM_CRASH, BOM_GOOD, make_bom_task
from tests.test_e2e_model import make_task

pytestmark = pytest.mark.model

ALIAS = "qwen-small"
CACHE = Path.home() / ".lessonloop" / "cache"


@dataclass(frozen=True)
class Server:
    url: str
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    settings = Settings(home=tmp_path_factory.mktemp("home"), cache=CACHE)
    model = bundled_model_path(settings.cache_dir, QWEN_CODER_05B)
    port = _free_port()
    threads = str(settings.n_threads or default_threads())
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "llama_cpp.server", "--model", str(model)),
                *("--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port)),
                *("--n_ctx", "8192", "--n_threads", threads, "--seed", "7"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                    assert ALIAS in reply.read().decode()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield Server(url=url, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _requests(server: Server) -> int:
    return server.log.read_text().count("POST /v1/chat/completions")


def _cli(tmp_path: Path, server: Server, *args: str) -> dict[str, object]:
    env = {
        **os.environ,
        "LESSONLOOP_HOME": str(tmp_path / "home"),
        "LESSONLOOP_CACHE": str(CACHE),
        "LESSONLOOP_OPENAI_BASE_URL": server.url,
    }
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "run", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert proc.returncode in (0, 1), proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def test_structured_output_from_a_real_server(server: Server) -> None:
    before = _requests(server)
    with OpenAICompatibleLLM(ALIAS, base_url=server.url, api_key="none") as llm:
        answer = llm.complete(
            [
                Message(role="system", content="You explain why a program failed."),
                Message(
                    role="user",
                    content="float(row['amount']) raised ValueError: could not convert string "
                    "to float: '$1,204.50'. Give the root cause, the fix and when it applies.",
                ),
            ],
            schema=LessonAnalysis,
            max_tokens=300,
        )
        # The server refused json_schema; the schema-bound json_object answered.
        assert llm.schema_mode(LessonAnalysis) == "json_object_schema"
    assert isinstance(answer.parsed, LessonAnalysis) and answer.parsed.root_cause.strip()
    assert answer.usage.completion_tokens > 0
    assert _requests(server) > before


def test_a_teacher_on_a_real_server_writes_the_lesson(tmp_path: Path, server: Server) -> None:
    """A scripted worker fails then passes; the teacher, behind the server, writes the lesson."""
    task = make_bom_task(tmp_path / "bom_task")
    replies = tmp_path / "worker.json"
    replies.write_text(json.dumps({GEN: [code(BOM_CRASH)], REFINE: [fix(BOM_GOOD, "utf-8-sig")]}))
    before = _requests(server)
    data = _cli(
        tmp_path,
        server,
        str(task),
        *("--model", f"scripted:{replies}", "--memory", str(tmp_path / "store")),
        *("--retro-model", f"openai:{ALIAS}"),
    )
    assert data["passed"] is True
    written = data["lessons_written"]
    assert isinstance(written, list) and [w["action"] for w in written] == ["created"]
    fallbacks = data["retrospective_fallbacks"]
    assert isinstance(fallbacks, list)
    assert not any(f.startswith(FALLBACK_UNAVAILABLE) for f in fallbacks), fallbacks
    usage = data["retrospective_usage"]
    assert isinstance(usage, dict) and usage["calls"] >= 1 and usage["completion_tokens"] > 0
    assert _requests(server) - before >= usage["calls"]


def test_a_worker_on_a_real_server_runs_the_loop(tmp_path: Path, server: Server) -> None:
    task = make_task(tmp_path / "sum_task")
    before = _requests(server)
    data = _cli(
        tmp_path,
        server,
        *(str(task), "--model", f"openai:{ALIAS}", "--no-memory", "--max-rounds", "2"),
    )
    usage = data["usage"]
    assert isinstance(usage, dict) and usage["completion_tokens"] > 0
    assert data["candidates_checked"] >= 1
    assert _requests(server) - before >= usage["calls"]
