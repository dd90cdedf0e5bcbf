"""The vector index: a chromadb collection derived from SQL, rebuildable at any time.

One entry per lesson: id = lesson id, document = symptom + root cause, embedding supplied by
us, metadata = scope, error_type, status, embedding_model (for filters and drift checks).

We never let chromadb embed: collections are opened with a refusing embedding function (see
`_refusing_embedding_function`; `None` is not enough in chromadb 1.x), so `add`/`query`
without explicit vectors fail loudly instead of downloading chromadb's default ONNX model.
Telemetry is off for every client we create.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from memory.dedup import Vector
from memory.errors import EmbeddingMismatchError, MemoryBackendError, MemoryConfigError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

MODEL_KEY = "lessonloop_embedding_model"
DIM_KEY = "lessonloop_embedding_dim"
_BATCH = 1000

Metadata = dict[str, str]


@dataclass(frozen=True)
class Hit:
    """One nearest neighbour: lesson id, cosine similarity, its stored vector."""

    lesson_id: str
    similarity: float
    vector: Vector


def _refusing_embedding_function() -> Any:
    """An embedding function that refuses to embed.

    chromadb 1.x falls back to its default ONNX embedder (downloaded on first use) when a
    collection has `embedding_function=None` and documents arrive without vectors. This stub
    takes its place, so such a call fails at once with a clear error instead of going online.
    """
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class RefuseToEmbed(EmbeddingFunction[Documents]):
        def __init__(self) -> None:
            # Nothing to set up; defined because chromadb warns about a missing __init__.
            return

        def __call__(self, input: Documents) -> Embeddings:
            raise MemoryConfigError(
                "lessonloop passes its own embeddings; chromadb was asked to embed text itself"
            )

        @staticmethod
        def name() -> str:
            return "lessonloop-refuse"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> RefuseToEmbed:
            return RefuseToEmbed()

        def default_space(self) -> Any:
            return "cosine"

        def supported_spaces(self) -> Any:
            return ["cosine"]

    return RefuseToEmbed()


def _chroma_errors() -> tuple[type[BaseException], ...]:
    import httpx
    from chromadb.errors import ChromaError

    # ValueError: chromadb's HttpClient reports an unreachable server that way.
    return (ChromaError, httpx.HTTPError, ValueError, ConnectionError)


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


def embedded_client(path: Path) -> ClientAPI:
    """Embedded on-disk chromadb (single process: it is not multi-process safe)."""
    import chromadb

    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=_settings())


def ephemeral_client() -> ClientAPI:
    """In-process, in-memory chromadb (tests, scripted examples)."""
    import chromadb

    return chromadb.EphemeralClient(settings=_settings())


def http_client(url: str) -> ClientAPI:
    """Client of a Chroma server, e.g. `http://127.0.0.1:8000` (`chroma run ...`)."""
    import chromadb

    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MemoryConfigError(f"chroma_url must look like http://host:port, got {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 8000)
    try:
        return chromadb.HttpClient(
            host=parts.hostname, port=port, ssl=parts.scheme == "https", settings=_settings()
        )
    except _chroma_errors() as exc:
        raise MemoryBackendError(f"cannot reach Chroma server at {url}: {exc}") from exc


class LessonIndex:
    """The lessons collection, bound to one embedding model id and dimension."""

    def __init__(
        self,
        client: ClientAPI,
        name: str,
        *,
        model_id: str,
        dim: int,
        reset_mismatch: bool = False,
    ) -> None:
        """Open or create the collection; a collection of another model raises
        `EmbeddingMismatchError`, or with `reset_mismatch` is dropped (`was_reset` is then
        True and the caller must reindex)."""
        self.client = client
        self.name = name
        self.model_id = model_id
        self.dim = dim
        self.was_reset = False
        try:
            self._collection = self._open()
        except EmbeddingMismatchError:
            if not reset_mismatch:
                raise
            self.reset()
            self.was_reset = True

    def _open(self) -> Collection:
        try:
            collection = self.client.get_or_create_collection(
                self.name,
                metadata={MODEL_KEY: self.model_id, DIM_KEY: self.dim, "hnsw:space": "cosine"},
                embedding_function=_refusing_embedding_function(),
            )
        except _chroma_errors() as exc:
            raise MemoryBackendError(f"cannot open chroma collection {self.name!r}: {exc}") from exc
        meta = collection.metadata or {}
        got_model, got_dim = meta.get(MODEL_KEY), meta.get(DIM_KEY)
        if got_model != self.model_id or got_dim != self.dim:
            raise EmbeddingMismatchError(
                f"vector index {self.name!r} holds {got_model} (dim {got_dim}) vectors, but the "
                f"store was opened with {self.model_id} (dim {self.dim}); reopen with "
                "reembed=True to rebuild it from SQL with the new model"
            )
        return collection

    def reset(self) -> None:
        """Drop and recreate the collection (reindex, or a model change)."""
        from chromadb.errors import NotFoundError

        try:
            self.client.delete_collection(self.name)
        except NotFoundError:
            pass  # nothing to drop
        except _chroma_errors() as exc:
            raise MemoryBackendError(f"cannot drop collection {self.name!r}: {exc}") from exc
        self._collection = self._open()

    def _check_dims(self, vectors: Sequence[Sequence[float]]) -> None:
        for vec in vectors:
            if len(vec) != self.dim:
                raise EmbeddingMismatchError(
                    f"got a {len(vec)}-dim vector for an index of {self.model_id} (dim {self.dim})"
                )

    def upsert(
        self,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        documents: Sequence[str],
        metadatas: Sequence[Metadata],
    ) -> None:
        """Insert or replace entries (idempotent: a repair may replay it)."""
        self._check_dims(vectors)
        for start in range(0, len(ids), _BATCH):
            end = start + _BATCH
            self._collection.upsert(
                ids=list(ids[start:end]),
                embeddings=np.asarray(vectors[start:end], dtype=np.float32),
                documents=list(documents[start:end]),
                metadatas=[dict(m) for m in metadatas[start:end]],
            )

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Metadata]) -> None:
        """Replace the metadata of existing entries (status change, drift repair)."""
        for start in range(0, len(ids), _BATCH):
            end = start + _BATCH
            self._collection.update(
                ids=list(ids[start:end]), metadatas=[dict(m) for m in metadatas[start:end]]
            )

    def delete(self, ids: Sequence[str]) -> None:
        """Remove entries by lesson id."""
        for start in range(0, len(ids), _BATCH):
            self._collection.delete(ids=list(ids[start : start + _BATCH]))

    def count(self) -> int:
        """Number of entries."""
        return int(self._collection.count())

    def entries(self) -> Iterator[tuple[str, Metadata]]:
        """Every (id, metadata) pair, paged so a large index is not loaded at once."""
        offset = 0
        while True:
            page = self._collection.get(include=["metadatas"], limit=_BATCH, offset=offset)
            ids = page["ids"]
            metas = page["metadatas"] or [{} for _ in ids]
            for lesson_id, meta in zip(ids, metas, strict=True):
                yield lesson_id, {k: str(v) for k, v in (meta or {}).items()}
            if len(ids) < _BATCH:
                return
            offset += len(ids)

    def query(self, vector: Sequence[float], n: int, where: Mapping[str, Any]) -> list[Hit]:
        """The `n` nearest entries matching `where`, most similar first."""
        self._check_dims([vector])
        if n <= 0:
            return []
        result = self._collection.query(
            query_embeddings=np.asarray([vector], dtype=np.float32),
            n_results=n,
            where=dict(where),
            include=["distances", "embeddings"],
        )
        ids = result["ids"][0]
        distances = (result["distances"] or [[]])[0]
        embeddings = (result["embeddings"] or [[]])[0]
        return [
            # cosine space: distance = 1 - cosine similarity.
            Hit(
                lesson_id=i,
                # float32 rounding can push an exact match a hair above 1.
                similarity=min(1.0, 1.0 - float(d)),
                vector=np.asarray(e, dtype=np.float32),
            )
            for i, d, e in zip(ids, distances, embeddings, strict=True)
        ]


def lesson_metadata(scope: str, error_type: str, status: str, model_id: str) -> Metadata:
    """The index metadata of one lesson (what recall filters on, what drift checks compare)."""
    return {"scope": scope, "error_type": error_type, "status": status, "embedding_model": model_id}
