"""One typed settings object, read at the edge (CLI, `Settings.from_env()`), never deep inside."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_home() -> Path:
    return Path.home() / ".lessonloop"


class Settings(BaseSettings):
    """All knobs in one place. Environment variables use the LESSONLOOP_ prefix."""

    model_config = SettingsConfigDict(env_prefix="LESSONLOOP_", extra="forbid", frozen=True)

    # LLM: "local" (the bundled default, qwen2.5-coder-1.5b), "local:qwen2.5-coder-0.5b",
    # "openai:MODEL", "scripted:..." in tests.
    model: str = "local"
    # The model that writes lessons (retrospective) and merged lessons (consolidation), e.g.
    # a stronger OpenAI-compatible model teaching a small local worker; None: `model`.
    retro_model: str | None = None
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    openai_timeout_s: float = 120.0
    openai_max_retries: int = 2
    # Any GGUF instead of the bundled one (no hash check beyond it being a readable GGUF).
    gguf_path: Path | None = None
    n_ctx: int = 4096
    n_threads: int | None = None
    # Longest the local model may take to load or to answer one call before it is stopped.
    local_timeout_s: float = Field(default=600.0, gt=0)

    home: Path = Field(default_factory=_default_home)
    # Where the joined, verified GGUF is kept; default home/cache.
    cache: Path | None = None
    # Memory store: a path (SQLite file + chroma dir beside it) or an SQLAlchemy URL.
    memory: str | None = None
    chroma_url: str | None = None  # http://host:port for a Chroma server (shared memory)
    # "minilm" (all-MiniLM-L6-v2), or "hash[:DIM]": the bag-of-words hashing embedder, no
    # model download, much weaker similarity. A store keeps the embedder it was built with.
    embedder: str = Field(default="minilm", pattern=r"^(minilm|hash(:\d+)?)$")
    # `lessonloop run` starts a consolidation pass once this many lessons wait for one
    # (lessons no pass has processed yet, counted in the store); 0: never.
    consolidate_every: int = Field(default=0, ge=0)

    # `lessonloop serve`: the access token every request needs (required off loopback).
    console_token: SecretStr | None = None

    max_rounds: int = Field(default=3, ge=1, le=20)
    score_threshold: float = Field(default=8.0, ge=1, le=10)
    # Distinct candidates checked per refinement round (the search), and a per-task cap.
    pool_size: int = Field(default=3, ge=1, le=16)
    # Distinct candidates checked in round 1: the greedy generation, then hot ones.
    first_pool: int = Field(default=4, ge=1, le=16)
    # Checks after a pass that take back what the fix did not need (agent.reduce); 0: off.
    reduce_budget: int = Field(default=8, ge=0, le=100)
    token_budget: int | None = Field(default=None, ge=1)

    @field_validator("memory")
    @classmethod
    def _a_store(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("give a store directory, a .sqlite3 file or a URL, not blank")
        return value

    @property
    def teacher_model(self) -> str:
        """The model spec that writes lessons: `retro_model`, else the worker's `model`."""
        return self.retro_model or self.model

    @property
    def cache_dir(self) -> Path:
        return self.cache or self.home / "cache"

    @property
    def runs_dir(self) -> Path:
        return self.home / "runs"

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from LESSONLOOP_* variables (OPENAI_* too), then explicit overrides."""
        import os

        values: dict[str, object] = {}
        if "OPENAI_API_KEY" in os.environ and "LESSONLOOP_OPENAI_API_KEY" not in os.environ:
            values["openai_api_key"] = os.environ["OPENAI_API_KEY"]
        if "OPENAI_BASE_URL" in os.environ and "LESSONLOOP_OPENAI_BASE_URL" not in os.environ:
            values["openai_base_url"] = os.environ["OPENAI_BASE_URL"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


def invalid_settings(exc: ValidationError) -> str:
    """A `Settings` validation error in one line: each bad setting by the name the user set
    it under (`LESSONLOOP_MAX_ROUNDS`, else the option's field), its value, what is wrong."""
    import os

    parts = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"])
        env = f"LESSONLOOP_{field.upper()}"
        name = env if env in os.environ else field or "settings"
        value = repr(error.get("input"))
        value = value if len(value) <= 60 else value[:57] + "..."
        parts.append(f"{name}={value}: {error['msg']}")
    return "invalid setting: " + "; ".join(parts)
