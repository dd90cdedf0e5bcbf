"""`LocalLLM`: a GGUF model run by llama-cpp-python in a child process (the offline default).

The model runs in `agent.llm.worker`, a child process started on the first call and kept
for the next ones; a lock serialises calls because one llama.cpp context is not
thread-safe. A native crash there (a build for another CPU, a bad GGUF, a sampler bug)
becomes `ModelCrashedError` naming the model, the signal and what to do, instead of
killing the caller; the next call starts a fresh child. Cost: one start per process
(~0.3 s of imports before the model load) and a JSON line each way per call, well under a
millisecond beside generations of seconds (scripts/bench_local_worker.py measures it).

Chat formatting uses the template stored in the GGUF. Structured output is constrained by
a grammar built from the pydantic JSON schema, so the model can only emit JSON of the
right shape; pydantic then validates what the grammar leaves out (ranges, lengths)
through the shared repair step.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent.errors import BackendError, ConfigurationError, ModelCrashedError, ModelFileError
from agent.llm.base import Completion, M, Message, Usage
from agent.llm.structured import complete_structured, model_schema, with_schema_instruction

if TYPE_CHECKING:
    from pydantic import BaseModel

_log = logging.getLogger(__name__)

WORKER = (sys.executable, "-m", "agent.llm.worker")
# What the crash message shows of the child's stderr.
_STDERR_TAIL = 1_500


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
    """Chat completions from a GGUF file via llama-cpp-python, in a child process."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        repeat_penalty: float = 1.0,
        worker: Sequence[str] = WORKER,
        timeout_s: float = 600.0,
    ) -> None:
        """Nothing starts here; the first `complete` pays the load (~1-3 s for 1.5B Q4).

        `n_threads` (generation and prompt) defaults to `default_threads()`. `seed` starts a
        per-instance seed sequence: runs repeat exactly, yet two calls at temperature > 0
        still draw different samples. `repeat_penalty=1.0` (off) keeps temperature 0 a
        plain greedy decode, as on OpenAI-compatible servers; code and JSON repeat tokens
        legitimately. `worker` is the command that serves the model (the model path and
        options are appended); tests swap in a worker that crashes. `timeout_s` bounds the
        model load and each call: a worker silent that long (a native deadlock) is stopped
        and the call fails with a BackendError instead of hanging the run.
        """
        self._path = Path(model_path)
        self._n_ctx = n_ctx
        self._n_threads = n_threads or default_threads()
        self._seeds = random.Random(seed)
        self._repeat_penalty = repeat_penalty
        self._worker = tuple(worker)
        self._timeout_s = timeout_s
        self._child: _Child | None = None
        self._no_grammar: set[type[BaseModel]] = set()
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

    def load(self) -> None:
        """Start the worker and load the model now (idempotent); `complete` does it on first use.

        Raises ModelFileError when llama.cpp refuses the file, ModelCrashedError when the
        worker dies while loading it.
        """
        with self._lock:
            if self._child is None:
                self._child = _Child.start(
                    [
                        *self._worker,
                        str(self._path),
                        "--n-ctx",
                        str(self._n_ctx),
                        "--threads",
                        str(self._n_threads),
                    ],
                    model=self.model_id,
                    path=self._path,
                    timeout_s=self._timeout_s,
                )
                self.load_seconds = self._child.load_seconds

    def close(self) -> None:
        """Stop the worker and free the model's memory; the next call starts it again."""
        with self._lock:
            if self._child is not None:
                self._child.stop()
                self._child = None

    def __del__(self) -> None:
        child = getattr(self, "_child", None)
        if child is not None:
            child.stop()

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
            result: Completion[M] = self._create(messages, options, None)
            return result

        def call(turns: Sequence[Message]) -> Completion[Any]:
            return self._create(turns, options, self._schema_text(schema))

        try:
            return complete_structured(call, messages, schema)
        except _NoGrammar as exc:
            # Unconstrained: the prompt has to carry the shape; repair catches the rest.
            _log.warning("no grammar for %s (%s); output is unconstrained", schema, exc)
            self._no_grammar.add(schema)
            return complete_structured(call, with_schema_instruction(messages, schema), schema)

    def _schema_text(self, schema: type[BaseModel]) -> str | None:
        """The JSON schema the worker turns into a grammar; None once it could not."""
        if schema in self._no_grammar:
            return None
        return json.dumps(grammar_schema(model_schema(schema)))

    def _create(
        self, messages: Sequence[Message], options: dict[str, Any], schema: str | None
    ) -> Completion[Any]:
        with self._lock:
            self.load()
            assert self._child is not None
            if options.get("seed") is None:
                # llama-cpp-python would reuse one derived seed for every call; draw our own.
                options = {**options, "seed": self._seeds.randint(1, 2**31 - 1)}
            request = {
                "messages": [{"role": m.role, "content": m.content} for m in messages],
                "options": {**options, "repeat_penalty": self._repeat_penalty},
                "schema": schema,
            }
            try:
                reply = self._child.ask(request)
            except BaseException:
                # Crashed, garbled or interrupted: its state is unknown; the next call
                # starts a fresh worker.
                self._child.stop()
                self._child = None
                raise
        if reply.get("error") == "grammar":
            raise _NoGrammar(str(reply.get("message", "")))
        if "error" in reply:
            # e.g. "Requested tokens (5000) exceed context window of 4096"
            raise BackendError(f"{self.model_id}: {reply.get('message', reply['error'])}")
        raw_usage = reply.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(raw_usage.get("prompt_tokens", 0)),
            completion_tokens=int(raw_usage.get("completion_tokens", 0)),
            calls=1,
        )
        return Completion(text=str(reply.get("text", "")), usage=usage, model=self.model_id)


class _NoGrammar(Exception):
    """The worker could not turn a JSON schema into a grammar (internal: triggers fallback)."""


class _Child:
    """One running worker process and its pipes."""

    def __init__(
        self,
        process: subprocess.Popen[str],
        stderr: IO[bytes],
        model: str,
        path: Path,
        timeout_s: float,
    ) -> None:
        self._timeout_s = timeout_s
        self._process = process
        self._stderr = stderr
        self._model = model
        self._path = path
        self.load_seconds: float | None = None

    @classmethod
    def start(cls, argv: Sequence[str], *, model: str, path: Path, timeout_s: float) -> _Child:
        # stderr goes to an unnamed file: read only when the child died, never a full pipe.
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the child, closed in stop()
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        try:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                encoding="utf-8",
                env=env,
            )
        except OSError as exc:
            stderr.close()
            raise BackendError(f"{model}: cannot start the model worker {argv[0]}: {exc}") from exc
        child = cls(process, stderr, model, path, timeout_s)
        hello = child._read("loading the model")
        if hello.get("error") == "import":
            child.stop()
            raise ConfigurationError(
                f"{model}: llama-cpp-python cannot be imported ({hello.get('message', '')}); "
                "install it with `bash scripts/install.sh`"
            )
        if hello.get("error") == "load":
            child.stop()
            raise ModelFileError(f"llama.cpp cannot load {path}: {hello.get('message', '')}")
        if not hello.get("ready"):
            child.stop()
            raise BackendError(f"{model}: the model worker answered {hello!r} instead of ready")
        child.load_seconds = float(hello.get("load_seconds", 0.0))
        return child

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._crashed("receiving a request")
        return self._read("generating")

    def _read(self, doing: str) -> dict[str, Any]:
        assert self._process.stdout is not None
        try:
            ready, _, _ = select.select([self._process.stdout], [], [], self._timeout_s)
            if not ready:
                self._process.kill()
                self.stop()
                raise BackendError(
                    f"{self._model}: the model worker gave no answer within "
                    f"{self._timeout_s:.0f} s while {doing}; it was stopped "
                    "(raise LESSONLOOP_LOCAL_TIMEOUT_S for a slow machine or a large model)"
                )
            line = self._process.stdout.readline()
        except KeyboardInterrupt:
            self.stop()
            raise
        if not line:
            return self._crashed(doing)
        try:
            reply = json.loads(line)
        except ValueError:
            self.stop()
            raise BackendError(f"{self._model}: the model worker wrote {line[:200]!r}") from None
        if not isinstance(reply, dict):
            self.stop()
            raise BackendError(f"{self._model}: the model worker wrote {line[:200]!r}")
        return reply

    def _crashed(self, doing: str) -> dict[str, Any]:
        try:
            code = self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        message = crash_message(self._model, self._path, code, doing, self._stderr_tail())
        self.stop()
        raise ModelCrashedError(message, model=self._model, returncode=code)

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            return self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def stop(self) -> None:
        if self._process.poll() is None:
            if self._process.stdin is not None:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdout, self._process.stdin, self._stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def crash_message(model: str, path: Path, returncode: int, doing: str, stderr_tail: str) -> str:
    """What a user reads when the model worker died: model, signal, and what to do next."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        how = f"was killed by {name} (signal {-returncode})"
    else:
        how = f"exited with code {returncode}"
    lines = [
        f"the local model {model} ({path}) {how} while {doing}.",
        "This is a crash inside llama.cpp, not a problem of the task.",
        "What to do: run `lessonloop doctor` to check the build and the model file; if it "
        "reports a non-portable build, reinstall with `bash scripts/install.sh`; or run "
        "with another model (--model local:qwen2.5-coder-0.5b, or openai:MODEL).",
    ]
    if stderr_tail:
        lines.append("Last output of the model worker:\n" + stderr_tail)
    return "\n".join(lines)


# Bounded integer ranges up to this size become enums in the grammar.
_MAX_ENUM_RANGE = 101
# Length bounds the grammar would have to spell out one repetition per unit: left to
# validation (and the repair turn). A string bounded to 600 characters becomes hundreds of
# nested optional rules, and the sampler recursing through them overflowed its stack
# (SIGSEGV in llama_sampler_sample); arrays are cut the same way.
_UNENFORCED = ("minLength", "maxLength", "minItems", "maxItems")


def grammar_schema(schema: Any) -> Any:
    """`schema` as the grammar should enforce it: small integer ranges as enums, no lengths.

    llama-cpp-python's schema-to-grammar converter ignores minimum/maximum, and a greedy
    0.5B model asked for a 1-10 score happily writes 100 -- twice, repair included. An enum
    of the allowed values is something the grammar does enforce cheaply. Length bounds are
    the opposite: expensive to enforce and dangerous (see `_UNENFORCED`), so pydantic checks
    them after the answer and the repair turn asks again.
    """
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    node = {
        key: grammar_schema(value)
        for key, value in schema.items()
        # An int under such a key is a bound; a dict would be a field of that name.
        if not (key in _UNENFORCED and isinstance(value, int))
    }
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
