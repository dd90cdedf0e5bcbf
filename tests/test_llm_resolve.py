"""resolve_llm: model strings become backends at the edge, with clear configuration errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from agent.app.settings import Settings
from agent.errors import ConfigurationError, ModelFileError
from agent.llm import Message, resolve_llm
from agent.llm.local import LocalLLM
from agent.llm.scripted import ScriptedLLM


def settings(tmp_path: Path, **values: Any) -> Settings:
    # Explicit values beat LESSONLOOP_* variables, so the developer's env cannot leak in.
    base: dict[str, Any] = {
        "home": tmp_path / "home",
        "openai_api_key": None,
        "openai_base_url": None,
        "gguf_path": None,
    }
    return Settings(**{**base, **values})


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 16)
    return path


def test_unknown_prefix_lists_valid_forms(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_llm("anthropic:claude", settings(tmp_path))
    msg = str(info.value)
    for form in ("local", "local:qwen2.5-coder-0.5b", "openai:MODEL", "local:/path/to/model.gguf"):
        assert form in msg


def test_openai_without_key_or_base_url_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY.*LESSONLOOP_OPENAI_BASE_URL"):
        resolve_llm("openai:gpt-4o-mini", settings(tmp_path))


def test_openai_needs_a_model_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="needs a model name"):
        resolve_llm("openai:", settings(tmp_path, openai_api_key=SecretStr("sk")))


def test_openai_with_key(tmp_path: Path) -> None:
    from agent.llm.openai import OpenAICompatibleLLM

    llm = resolve_llm("openai:gpt-4o-mini", settings(tmp_path, openai_api_key=SecretStr("sk-x")))
    assert isinstance(llm, OpenAICompatibleLLM) and llm.model_id == "openai:gpt-4o-mini"
    llm.close()


def test_openai_local_server_needs_no_key(tmp_path: Path) -> None:
    from agent.llm.openai import OpenAICompatibleLLM

    llm = resolve_llm(
        "openai:qwen2.5-coder", settings(tmp_path, openai_base_url="http://127.0.0.1:11434/v1")
    )
    assert isinstance(llm, OpenAICompatibleLLM) and llm.model_id == "openai:qwen2.5-coder"
    llm.close()


def test_local_path_spec_uses_that_file_without_loading(tmp_path: Path, gguf: Path) -> None:
    llm = resolve_llm(f"local:{gguf}", settings(tmp_path))
    assert isinstance(llm, LocalLLM)
    assert llm.model_path == gguf and llm.model_id == "local:tiny.gguf"


def test_gguf_path_setting_overrides_the_bundled_default(tmp_path: Path, gguf: Path) -> None:
    llm = resolve_llm("local", settings(tmp_path, gguf_path=gguf))
    assert isinstance(llm, LocalLLM) and llm.model_path == gguf
    # Nothing was joined into the cache.
    assert not (tmp_path / "home").exists()


def test_local_path_must_exist_and_be_gguf(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="not found"):
        resolve_llm(f"local:{tmp_path / 'nope.gguf'}", settings(tmp_path))
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("hello")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        resolve_llm("local", settings(tmp_path, gguf_path=not_gguf))


def test_unknown_local_model_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown local model 'llama-70b'"):
        resolve_llm("local:llama-70b", settings(tmp_path))


def test_scripted_from_json_list_and_routes(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["a", "b"]))
    llm = resolve_llm(f"scripted:{replies}", settings(tmp_path))
    assert isinstance(llm, ScriptedLLM)
    ask = [Message(role="user", content="?")]
    assert [llm.complete(ask).text for _ in range(2)] == ["a", "b"]

    routes = tmp_path / "routes.json"
    routes.write_text(json.dumps({"critic": ["ok"]}))
    routed = resolve_llm(f"scripted:{routes}", settings(tmp_path))
    critic = [Message(role="system", content="You are the critic."), *ask]
    assert routed.complete(critic).text == "ok"


@pytest.mark.parametrize("content", [None, "not json", '{"a": 1}', "[1]"])
def test_scripted_bad_file(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigurationError, match="scripted:"):
        resolve_llm(f"scripted:{path}", settings(tmp_path))
