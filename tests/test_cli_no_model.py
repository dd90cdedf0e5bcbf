"""The embedder is loaded lazily, once per process: commands that need no vector load none.

Each CLI command runs as a real subprocess (`python -X importtime -m agent ...`) on a real
SQLite + chromadb store that says it holds MiniLM vectors, with the default (MiniLM)
embedder. Python's import log shows whether `sentence_transformers` or `torch` was imported;
`lessons search` must embed its query, so it is the control that shows the probe sees a load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, Memory
from memory.embeddings import MINILM_DIM, MINILM_MODEL_ID

REPO = Path(__file__).resolve().parents[1]
MODEL_MODULES = ("sentence_transformers", "torch")


class _LabelledAsMiniLM(HashEmbedder):
    """Hash vectors under MiniLM's model id and size: a store the CLI's MiniLM can open,
    built without loading MiniLM in the test process."""

    def __init__(self) -> None:
        super().__init__(MINILM_DIM)

    @property
    def model_id(self) -> str:
        return MINILM_MODEL_ID


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("no-model") / "memory"
    with Memory.open(str(path), embedder=_LabelledAsMiniLM()) as memory:
        result = memory.add(
            LessonDraft(
                scope="default",
                error_type="runtime_error",
                symptom="ValueError: could not convert string to float: '$1,200'",
                root_cause="prices carry a currency symbol and a thousands separator",
                fix="strip the symbol and the separator before float()",
            )
        )
    assert result.lesson is not None
    return path, result.lesson.id


def _imported_model_modules(store: Path, args: Sequence[str]) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    env["LESSONLOOP_HOME"] = str(store.parent / "home")
    env["LESSONLOOP_MEMORY"] = str(store)  # the default embedder: MiniLM
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agent", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # importtime lines: "import time: self | cumulative | <indent>module.name"
    names = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    return sorted({n for n in names if n.split(".")[0] in MODEL_MODULES})


@pytest.mark.parametrize(
    "command",
    [
        ["lessons", "list"],
        ["lessons", "show", "{id}"],
        ["lessons", "export", "--out", "{tmp}/out.jsonl"],
        ["stats"],
        ["stats", "--quality"],
        ["review"],
        ["memory", "check"],
    ],
    ids=lambda c: " ".join(w for w in c if not w.startswith("{")),
)
def test_a_command_without_vectors_loads_no_model(
    store: tuple[Path, str], tmp_path: Path, command: list[str]
) -> None:
    path, lesson_id = store
    args = [w.format(id=lesson_id, tmp=tmp_path) for w in command]
    assert _imported_model_modules(path, args) == []


def test_a_command_that_embeds_loads_the_model(store: tuple[Path, str]) -> None:
    # The control: the probe above would see a model load if one happened.
    path, _ = store
    loaded = _imported_model_modules(path, ["lessons", "search", "currency symbol in prices"])
    assert "sentence_transformers" in loaded and "torch" in loaded


def test_every_embedder_of_a_process_shares_one_loaded_model(tmp_path: Path) -> None:
    # A fresh process: no other test has loaded the model there yet.
    script = (
        "from memory.embeddings import MiniLMEmbedder, minilm_loads\n"
        "a, b = MiniLMEmbedder(), MiniLMEmbedder(batch_size=8)\n"
        "print(minilm_loads())\n"
        "a.embed(['one']); b.embed(['two']); MiniLMEmbedder().embed(['three'])\n"
        "print(minilm_loads())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "1"]
