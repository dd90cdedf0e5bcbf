"""`resolve_llm`: the one place where a model string becomes a backend object.

    local | local:qwen2.5-coder-1.5b   the default bundled GGUF (or settings.gguf_path when set)
    local:qwen2.5-coder-0.5b           the small bundled GGUF (extra `small`)
    local:/path/to/model.gguf          that GGUF file
    openai:MODEL                       any OpenAI-compatible server (settings.openai_*)
    scripted:/path/replies.json        ScriptedLLM from a JSON list (or {system-substring: list})

Each branch imports its SDK lazily, so `import agent` stays light and a missing optional
backend only matters to whoever asks for it. Nothing past this function knows which
provider it talks to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

from agent.errors import ConfigurationError
from agent.llm.base import LLM


class BackendOptions(Protocol):
    """What building a backend reads. The application's `Settings` has these fields; the LLM
    layer does not import it (the app depends on the LLM layer, not the other way round)."""

    @property
    def gguf_path(self) -> Path | None: ...
    @property
    def cache_dir(self) -> Path: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def n_threads(self) -> int | None: ...
    @property
    def local_timeout_s(self) -> float: ...
    @property
    def openai_base_url(self) -> str | None: ...
    @property
    def openai_api_key(self) -> SecretStr | None: ...
    @property
    def openai_timeout_s(self) -> float: ...
    @property
    def openai_max_retries(self) -> int: ...


VALID_SPECS = (
    "local",
    "local:qwen2.5-coder-1.5b",
    "local:qwen2.5-coder-0.5b",
    "local:/path/to/model.gguf",
    "openai:MODEL",
    "scripted:/path/replies.json",
)

# Local servers (Ollama, vLLM, llama.cpp server) ignore the key, but the SDK insists on one.
_PLACEHOLDER_KEY = "not-needed"


def resolve_llm(spec: str, settings: BackendOptions) -> LLM:
    """Build the backend named by `spec` (e.g. "openai:gpt-4o-mini") from `settings`.

    Raises ConfigurationError for an unknown prefix or missing settings, and
    ModelFileError (a ConfigurationError) when a local model file is missing or corrupt.
    """
    prefix, _, rest = spec.strip().partition(":")
    if prefix == "local":
        return _local(rest.strip(), settings)
    if prefix == "openai":
        return _openai(rest.strip(), settings)
    if prefix == "scripted":
        return _scripted(rest.strip())
    raise ConfigurationError(f"unknown model {spec!r}; valid forms: {', '.join(VALID_SPECS)}")


def _local(rest: str, settings: BackendOptions) -> LLM:
    from agent.llm.local import LocalLLM
    from agent.llm.model_file import (
        BUNDLED_MODELS,
        DEFAULT_BUNDLED,
        bundled_model_path,
        check_gguf,
    )

    if rest == "" and settings.gguf_path is not None:
        # LESSONLOOP_GGUF_PATH stands in for the bundled default; a named model still wins.
        path = check_gguf(settings.gguf_path)
    elif rest in ("", *BUNDLED_MODELS):
        model = BUNDLED_MODELS[rest] if rest else DEFAULT_BUNDLED
        path = bundled_model_path(settings.cache_dir, model)
    elif rest.lower().endswith(".gguf") or "/" in rest or "\\" in rest:
        path = check_gguf(Path(rest))
    else:
        raise ConfigurationError(
            f"unknown local model {rest!r}; use one of {sorted(BUNDLED_MODELS)} "
            "or a path to a .gguf file (local:/path/to/model.gguf)"
        )
    return LocalLLM(
        path,
        n_ctx=settings.n_ctx,
        n_threads=settings.n_threads,
        timeout_s=settings.local_timeout_s,
    )


def _openai(model: str, settings: BackendOptions) -> LLM:
    if not model:
        raise ConfigurationError("openai: needs a model name, e.g. openai:gpt-4o-mini")
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    if not key and settings.openai_base_url is None:
        raise ConfigurationError(
            f"openai:{model} needs an API key: set OPENAI_API_KEY (or LESSONLOOP_OPENAI_API_KEY), "
            "or set LESSONLOOP_OPENAI_BASE_URL to a local server (Ollama, vLLM, llama.cpp "
            "server) that needs none"
        )
    from agent.llm.openai import OpenAICompatibleLLM

    return OpenAICompatibleLLM(
        model,
        base_url=settings.openai_base_url,
        api_key=key or _PLACEHOLDER_KEY,
        timeout_s=settings.openai_timeout_s,
        max_retries=settings.openai_max_retries,
    )


def _scripted(rest: str) -> LLM:
    from agent.llm.scripted import ScriptedLLM

    if not rest:
        raise ConfigurationError(
            "scripted: needs a JSON file of replies, e.g. scripted:replies.json"
        )
    path = Path(rest).expanduser()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"scripted: cannot read replies from {path}: {exc}") from exc
    if isinstance(data, list) and all(isinstance(r, str) for r in data):
        return ScriptedLLM(data)
    if isinstance(data, dict) and all(
        isinstance(v, list) and all(isinstance(r, str) for r in v) for v in data.values()
    ):
        return ScriptedLLM.by_system(data)
    raise ConfigurationError(
        f"scripted: {path} must hold a JSON list of strings or an object of such lists"
    )
