"""LocalLLM: unit checks without a model, and the real bundled model under `-m model`."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agent.app.settings import Settings
from agent.errors import BackendError, ConfigurationError, ModelCrashedError, ModelFileError
from agent.llm import LLM, Message, resolve_llm
from agent.llm.local import LocalLLM, default_threads, grammar_schema

FAKE_WORKER = Path(__file__).parent / "fakes" / "crashing_worker.py"
HI = [Message(role="user", content="hi")]


def fake(mode: str, state: Path) -> tuple[str, ...]:
    return (sys.executable, str(FAKE_WORKER), mode, str(state))


def test_construction_is_lazy(tmp_path: Path) -> None:
    # A path that does not exist: constructing must not touch it.
    llm = LocalLLM(tmp_path / "absent.gguf")
    assert llm.model_id == "local:absent.gguf" and llm.load_seconds is None


def test_unloadable_file_is_a_model_file_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\xff" * 64)
    with pytest.raises(ModelFileError, match="llama.cpp cannot load"):
        LocalLLM(bogus).complete([Message(role="user", content="hi")])


def test_a_worker_killed_by_a_signal_is_a_clear_error(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", worker=fake("request", tmp_path))
    with pytest.raises(ModelCrashedError) as info:
        llm.complete(HI)
    message = str(info.value)
    # The model, the signal, what the worker said last, and what to do next.
    assert "local:m.gguf" in message and "SIGSEGV (signal 11)" in message
    assert "while generating" in message and "fake crash in the sampler" in message
    assert "lessonloop doctor" in message and "scripts/install.sh" in message
    assert info.value.returncode == -signal.SIGSEGV and isinstance(info.value, BackendError)


def test_a_crash_while_loading_is_reported_as_such(tmp_path: Path) -> None:
    with pytest.raises(ModelCrashedError, match="while loading the model"):
        LocalLLM(tmp_path / "m.gguf", worker=fake("load", tmp_path)).complete(HI)


def test_a_load_refusal_is_a_model_file_error(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="cannot load .*Failed to load model"):
        LocalLLM(tmp_path / "m.gguf", worker=fake("load-error", tmp_path)).complete(HI)


def test_the_call_after_a_crash_starts_a_fresh_worker(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", worker=fake("once", tmp_path))
    with pytest.raises(ModelCrashedError):
        llm.complete(HI)
    answer = llm.complete([Message(role="user", content="again")])
    assert answer.text == "echo: again" and answer.usage.completion_tokens == 2
    llm.close()


def test_a_garbled_reply_is_an_error_and_the_next_call_restarts(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", worker=fake("garbled", tmp_path))
    with pytest.raises(BackendError, match="the model worker wrote"):
        llm.complete(HI)
    assert llm.complete(HI).text == "echo: hi"
    llm.close()


def test_missing_llama_cpp_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot be imported"):
        LocalLLM(tmp_path / "m.gguf", worker=fake("import-error", tmp_path)).complete(HI)


def test_a_schema_without_grammar_falls_back_to_the_prompt(tmp_path: Path) -> None:
    class A(BaseModel):
        a: int

    llm = LocalLLM(tmp_path / "m.gguf", worker=fake("no-grammar", tmp_path))
    answer = llm.complete(HI, schema=A)
    assert answer.parsed == A(a=1)
    assert llm.complete(HI, schema=A).parsed == A(a=1)  # remembered: no second refusal
    llm.close()


def test_a_silent_worker_is_stopped_at_the_deadline(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", worker=fake("hang", tmp_path), timeout_s=1.0)
    with pytest.raises(BackendError, match="no answer within 1 s while generating"):
        llm.complete(HI)
    llm.close()


def test_a_missing_worker_program_is_a_backend_error(tmp_path: Path) -> None:
    llm = LocalLLM(tmp_path / "m.gguf", worker=(str(tmp_path / "no-such-python"),))
    with pytest.raises(BackendError, match="cannot start the model worker"):
        llm.complete(HI)


def test_grammar_leaves_length_bounds_to_validation() -> None:
    class Bounded(BaseModel):
        text: str = Field(min_length=8, max_length=600)
        items: list[str] = Field(max_length=50)
        maxLength: dict[str, int]  # noqa: N815 - a field that happens to carry the name

    schema = grammar_schema(Bounded.model_json_schema())
    props = schema["properties"]
    assert "maxLength" not in props["text"] and "minLength" not in props["text"]
    assert "maxItems" not in props["items"]
    assert "maxLength" in props  # a field, not a bound: kept


class Scored(BaseModel):
    score: int = Field(ge=1, le=10)
    rank: int = Field(gt=0, lt=4)
    count: int = Field(ge=0)
    big: int = Field(ge=0, le=1_000_000)


def test_grammar_schema_turns_small_integer_ranges_into_enums() -> None:
    props = grammar_schema(Scored.model_json_schema())["properties"]
    assert props["score"]["enum"] == list(range(1, 11)) and "type" not in props["score"]
    assert props["rank"]["enum"] == [1, 2, 3]
    # Open or huge ranges stay integers; pydantic validation and repair cover them.
    assert "enum" not in props["count"] and "enum" not in props["big"]


def test_default_threads_leaves_room_for_the_rest_of_the_machine() -> None:
    assert 1 <= default_threads() <= max(1, (os.cpu_count() or 1) // 2)


class Review(BaseModel):
    verdict: Literal["pass", "fail"]
    score: int = Field(ge=1, le=10)
    issues: list[str]


@pytest.fixture(scope="module")
def real_llm(tmp_path_factory: pytest.TempPathFactory) -> LLM:
    home = tmp_path_factory.mktemp("home")
    return resolve_llm("local", Settings(home=home, gguf_path=None))


@pytest.mark.model
def test_real_model_chat_and_structured(real_llm: LLM) -> None:
    assert isinstance(real_llm, LocalLLM)
    started = time.perf_counter()
    chat = real_llm.complete(
        [
            Message(role="system", content="You are a concise Python assistant."),
            Message(role="user", content="Write a Python one-liner that reverses a string s."),
        ],
        max_tokens=64,
    )
    chat_s = time.perf_counter() - started
    assert "[::-1]" in chat.text
    assert chat.usage.prompt_tokens > 10 and 0 < chat.usage.completion_tokens <= 64

    started = time.perf_counter()
    review = real_llm.complete(
        [
            Message(role="system", content="You review Python code. Answer in JSON."),
            Message(
                role="user",
                content=(
                    "Review this function. verdict is pass or fail, score 1-10, issues a list "
                    "of problems.\n\ndef add(a, b):\n    return a - b\n"
                ),
            ),
        ],
        schema=Review,
        max_tokens=200,
    )
    review_s = time.perf_counter() - started
    assert isinstance(review.parsed, Review)
    assert review.usage.calls in (1, 2)

    tokens = chat.usage.completion_tokens + review.usage.completion_tokens
    # Shown with -s: the numbers the brief asks to report.
    print(
        f"\nload {real_llm.load_seconds:.2f}s | chat {chat_s:.2f}s "
        f"({chat.usage.completion_tokens} tok) | structured {review_s:.2f}s "
        f"({review.usage.completion_tokens} tok, {review.usage.calls} call(s)) | "
        f"{tokens / (chat_s + review_s - (real_llm.load_seconds or 0)):.1f} tok/s incl. prompt"
        f"\nchat: {chat.text!r}\nreview: {review.parsed!r}"
    )


@pytest.mark.model
def test_real_model_is_deterministic_at_temperature_zero(real_llm: LLM) -> None:
    ask = [Message(role="user", content="Name one prime number. Answer with the number only.")]
    first = real_llm.complete(ask, max_tokens=8)
    assert real_llm.complete(ask, max_tokens=8).text == first.text


def _generator_turn(task_dir: str) -> list[Message]:
    from agent import prompts
    from agent.task import load_task

    task = load_task(Path(__file__).resolve().parents[1] / "examples" / "traps" / task_dir)
    user = prompts.render_generator(task.goal, task.output, task.workspace_files(), "", "")
    return [
        Message(role="system", content=prompts.GENERATOR_SYSTEM),
        Message(role="user", content=user),
    ]


@pytest.mark.model
def test_a_greedy_reply_does_not_depend_on_the_call_before_it(real_llm: LLM) -> None:
    """The euro task's generator prompt, asked right after the dollar task's (they share the
    system prompt and the prompt's frame: llama.cpp reuses that part of its cache) and then
    again, gets the reply a fresh model gives it. Before `_reuse_whole_batches`, this pair
    gave two different programs."""
    euro, dollar = _generator_turn("currency_02_expenses"), _generator_turn("currency_01_invoices")
    assert isinstance(real_llm, LocalLLM)
    fresh = LocalLLM(real_llm.model_path)
    try:
        alone = fresh.complete(euro, max_tokens=120).text
    finally:
        fresh.close()
    real_llm.complete(dollar, max_tokens=120)
    assert real_llm.complete(euro, max_tokens=120).text == alone
    assert real_llm.complete(euro, max_tokens=120).text == alone


class _FakeCtx:
    def __init__(self) -> None:
        self.removed: list[int] = []

    def kv_cache_seq_rm(self, seq: int, start: int, end: int) -> bool:
        self.removed.append(start)
        return True


class _FakeLlama:
    """What `_reuse_whole_batches` touches of a llama_cpp.Llama: the cached tokens, the
    batch size, the cache trim, and `generate` (records the cache it was called with)."""

    n_batch = 4

    def __init__(self, cached: list[int]) -> None:
        self.input_ids, self.n_tokens, self._ctx = list(cached), len(cached), _FakeCtx()
        self.calls: list[tuple[list[int], int]] = []

    @property
    def _input_ids(self) -> list[int]:
        return self.input_ids[: self.n_tokens]

    def generate(self, tokens: list[int], reset: bool = True) -> list[int]:
        self.calls.append((tokens, self.n_tokens))
        return tokens


def test_the_prompt_cache_is_reused_in_whole_batches_only() -> None:
    from agent.llm.worker import _reuse_whole_batches

    # Last call: a 10-token prompt and its reply. The next prompt shares 6 tokens: only the
    # first whole batch (4 tokens) is kept, so the rest is evaluated from a batch boundary.
    llama = _FakeLlama(list(range(10)))
    _reuse_whole_batches(llama)
    llama.generate([0, 1, 2, 3, 4, 5, 99, 98, 97])
    assert llama.calls[-1][1] == 4 and llama._ctx.removed == [4]
    # The same prompt again (a hot sample; the cache holds it and its reply) keeps every
    # whole batch but the one holding the last prompt token.
    llama.input_ids, llama.n_tokens = [0, 1, 2, 3, 4, 5, 99, 98, 97, 50], 10
    llama.generate([0, 1, 2, 3, 4, 5, 99, 98, 97])
    assert llama.calls[-1][1] == 8
    # Nothing shared beyond a batch: nothing kept; an empty cache is left alone.
    llama.generate([0, 1, 7])
    assert llama.calls[-1][1] == 0
    llama.generate([5, 6])
    assert llama.calls[-1][1] == 0 and llama._ctx.removed == [4, 8, 0]
