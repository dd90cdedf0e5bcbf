"""The vector index: a chromadb collection derived from SQL, rebuildable at any time.

One entry per lesson: id = lesson id, embedding supplied by us (of the lesson's index text,
`memory.dedup.index_text`), metadata = scope, error_type, embedding_model (for filters and
drift checks), in one collection per scope (see `LessonIndex`). No document: nothing reads
it back (recall's texts and BM25 come from SQL), and chromadb's full-text index of the
documents took a quarter of a bulk load's CPU time.

No status: it lives in SQL alone. A status change (a merge, a deprecation, an undo) writes
nothing here, and recall checks every candidate's status against SQL; where it must search
among recallable lessons only, it names them (`query(..., only=...)`). Why: a full pass at
100k lessons merges ~95k, and rewriting their metadata cost chromadb ~0.2 ms each, a quarter
of the pass. Entries written before this carry a "status" key, which nothing reads.

We never let chromadb embed: collections are opened with a refusing embedding function (see
`_refusing_embedding_function`; `None` is not enough in chromadb 1.x), so `add`/`query`
without explicit vectors fail loudly instead of downloading chromadb's default ONNX model.
Telemetry is off for every client we create.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from memory.errors import (
    EmbeddingMismatchError,
    MemoryBackendError,
    MemoryConfigError,
    read_only,
    read_only_store,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

MODEL_KEY = "lessonloop_embedding_model"
SCOPE_KEY = "lessonloop_scope"
DIM_KEY = "lessonloop_embedding_dim"
_BATCH = 1000  # entries per page when reading the index

Metadata = dict[str, str]


@dataclass(frozen=True)
class Hit:
    """One nearest neighbour: lesson id and cosine similarity."""

    lesson_id: str
    similarity: float


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
    try:
        return chromadb.PersistentClient(path=str(path), settings=_settings())
    except _chroma_errors() as exc:  # e.g. "database or disk is full"
        where = read_only(exc, path / "chroma.sqlite3", path)
        raise MemoryBackendError(
            read_only_store(where, exc)
            if where is not None
            else f"cannot open the vector index at {path}: {exc} (it is derived from SQL: if "
            "the disk is fine, move that directory aside and the next open rebuilds it)"
        ) from exc


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
    """The lesson vectors, bound to one embedding model id and dimension.

    One chromadb collection per scope (`<name>-s-<hash of scope>`) plus a registry collection
    `<name>` that records the model. Why per scope: every recall is confined to one or two
    scopes, and chromadb's metadata filtering costs tens of milliseconds at 10k+ entries
    (measured 50-90 ms at 10k, against 5-15 ms for an unfiltered query), while a collection
    per scope needs no filter at all. Status is not stored (see the module docstring).
    """

    def __init__(
        self,
        client: ClientAPI,
        name: str,
        *,
        model_id: str,
        dim: int,
        reset_mismatch: bool = False,
    ) -> None:
        """Open or create the index; one built with another model raises
        `EmbeddingMismatchError`, or with `reset_mismatch` is dropped (`was_reset` is then
        True and the caller must reindex)."""
        self.client = client
        self.name = name
        self.model_id = model_id
        self.dim = dim
        self.was_reset = False
        self._scopes: dict[str, Collection] = {}
        self._write_batch: int | None = None
        try:
            self._open(self.name, {})
        except EmbeddingMismatchError:
            if not reset_mismatch:
                raise
            self.reset()
            self.was_reset = True

    def _scope_name(self, scope: str) -> str:
        digest = hashlib.blake2b(scope.encode(), digest_size=8).hexdigest()
        return f"{self.name}-s-{digest}"

    def _open(self, name: str, extra: Mapping[str, str]) -> Collection:
        metadata = {MODEL_KEY: self.model_id, DIM_KEY: self.dim, "hnsw:space": "cosine", **extra}
        try:
            collection = self.client.get_or_create_collection(
                name, metadata=metadata, embedding_function=_refusing_embedding_function()
            )
        except _chroma_errors() as exc:
            raise MemoryBackendError(f"cannot open chroma collection {name!r}: {exc}") from exc
        self._check_model(name, collection)
        return collection

    def _check_model(self, name: str, collection: Collection) -> None:
        meta = collection.metadata or {}
        got_model, got_dim = meta.get(MODEL_KEY), meta.get(DIM_KEY)
        if got_model != self.model_id or got_dim != self.dim:
            raise EmbeddingMismatchError(
                f"vector index {name!r} holds {got_model} (dim {got_dim}) vectors, but the "
                f"store was opened with {self.model_id} (dim {self.dim}); reopen with "
                "reembed=True to rebuild it from SQL with the new model"
            )

    def _scope(self, scope: str, *, create: bool) -> Collection | None:
        if scope in self._scopes:
            return self._scopes[scope]
        name = self._scope_name(scope)
        if create:
            collection = self._open(name, {SCOPE_KEY: scope})
        else:
            from chromadb.errors import NotFoundError

            # Not cached when missing: another process may create the scope at any moment.
            try:
                collection = self.client.get_collection(
                    name, embedding_function=_refusing_embedding_function()
                )
            except NotFoundError:
                return None
            except _chroma_errors() as exc:
                raise MemoryBackendError(f"cannot open chroma collection {name!r}: {exc}") from exc
            self._check_model(name, collection)
        self._scopes[scope] = collection
        return collection

    def _collection_names(self) -> set[str]:
        return {str(getattr(c, "name", c)) for c in self.client.list_collections()}

    def _all_scopes(self) -> list[Collection]:
        prefix = f"{self.name}-s-"
        found = []
        for name in sorted(self._collection_names()):
            if name.startswith(prefix):
                found.append(
                    self.client.get_collection(
                        name, embedding_function=_refusing_embedding_function()
                    )
                )
        return found

    def reset(self) -> None:
        """Drop every collection of this index and recreate the registry (reindex)."""
        self.drop()
        self._open(self.name, {})

    def drop(self) -> None:
        """Delete every collection of this index (the registry too)."""
        from chromadb.errors import NotFoundError

        prefix = f"{self.name}-s-"
        names = [n for n in self._collection_names() if n == self.name or n.startswith(prefix)]
        for name in names:
            try:
                self.client.delete_collection(name)
            except NotFoundError:
                pass  # dropped meanwhile by another process: same outcome
            except _chroma_errors() as exc:
                raise MemoryBackendError(f"cannot drop collection {name!r}: {exc}") from exc
        self._scopes.clear()

    def _chunks(self, rows: Sequence[int]) -> Iterator[Sequence[int]]:
        """`rows` in as few write calls as the client takes (`max_batch_size`: fewer calls,
        each with chromadb's fixed cost of validation and a log commit)."""
        if self._write_batch is None:
            try:
                self._write_batch = max(1, int(self.client.get_max_batch_size()))
            except _chroma_errors() as exc:
                raise MemoryBackendError(f"cannot reach the vector index: {exc}") from exc
        for start in range(0, len(rows), self._write_batch):
            yield rows[start : start + self._write_batch]

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
        metadatas: Sequence[Metadata],
    ) -> None:
        """Insert or replace entries (idempotent: a repair may replay it)."""
        self._check_dims(vectors)
        by_scope: dict[str, list[int]] = {}
        for i, meta in enumerate(metadatas):
            by_scope.setdefault(meta["scope"], []).append(i)
        for scope, rows in by_scope.items():
            collection = self._scope(scope, create=True)
            assert collection is not None  # create=True
            for chunk in self._chunks(rows):
                try:
                    collection.upsert(
                        ids=[ids[i] for i in chunk],
                        embeddings=np.asarray([vectors[i] for i in chunk], dtype=np.float32),
                        metadatas=[dict(metadatas[i]) for i in chunk],
                    )
                except _chroma_errors() as exc:  # a full disk, a server gone
                    raise MemoryBackendError(f"cannot write to the vector index: {exc}") from exc

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Metadata]) -> None:
        """Replace the metadata of existing entries of the same scope (a drift repair)."""
        by_scope: dict[str, list[int]] = {}
        for i, meta in enumerate(metadatas):
            by_scope.setdefault(meta["scope"], []).append(i)
        for scope, rows in by_scope.items():
            collection = self._scope(scope, create=False)
            if collection is None:
                continue  # not indexed at all: check() reports it as missing
            for chunk in self._chunks(rows):
                collection.update(
                    ids=[ids[i] for i in chunk], metadatas=[dict(metadatas[i]) for i in chunk]
                )

    def delete(self, ids: Sequence[str]) -> None:
        """Remove entries by lesson id, whatever scope collection holds them."""
        if not ids:
            return
        positions = range(len(ids))
        for collection in self._all_scopes():
            for chunk in self._chunks(positions):
                collection.delete(ids=[ids[i] for i in chunk])

    def count(self) -> int:
        """Number of entries."""
        try:
            return sum(int(c.count()) for c in self._all_scopes())
        except _chroma_errors() as exc:  # a server gone, a broken index directory
            raise MemoryBackendError(f"cannot count the vector index: {exc}") from exc

    def entries(self) -> Iterator[tuple[str, Metadata]]:
        """Every (id, metadata) pair, paged so a large index is not loaded at once."""
        for collection in self._all_scopes():
            offset = 0
            while True:
                page = collection.get(include=["metadatas"], limit=_BATCH, offset=offset)
                ids = page["ids"]
                metas = page["metadatas"] or [{} for _ in ids]
                for lesson_id, meta in zip(ids, metas, strict=True):
                    yield lesson_id, {k: str(v) for k, v in (meta or {}).items()}
                if len(ids) < _BATCH:
                    break
                offset += len(ids)

    def query(
        self,
        vector: Sequence[float],
        n: int,
        *,
        scopes: Sequence[str],
        where: Mapping[str, Any] | None = None,
        only: Mapping[str, Sequence[str]] | None = None,
    ) -> list[Hit]:
        """The `n` nearest entries of the given scopes, best first: filtered by metadata
        (`where`), or among the ids `only[scope]` names (a scope it does not name is skipped).
        Not both: chromadb 1.5 took 10 s for one such query over 20k entries (1 k ids named)."""
        self._check_dims([vector])
        if n <= 0:
            return []
        if where and only is not None:
            raise ValueError("query by `where` or by `only`, not both")  # our bug
        query_vec = np.asarray([vector], dtype=np.float32)
        hits: list[Hit] = []
        for scope in dict.fromkeys(scopes):
            ids = None if only is None else list(only.get(scope, ()))
            collection = None if ids == [] else self._scope(scope, create=False)
            if collection is None:
                continue  # nothing learned in that scope yet, or no id named there
            try:
                result = _query(collection, query_vec, n, where, ids)
            except _chroma_errors() as exc:  # a server gone, a broken index directory
                raise MemoryBackendError(f"cannot query the vector index: {exc}") from exc
            distances = (result["distances"] or [[]])[0]
            hits.extend(
                # cosine space: distance = 1 - cosine; float32 can overshoot 1 by a hair.
                Hit(lesson_id=i, similarity=min(1.0, 1.0 - float(d)))
                for i, d in zip(result["ids"][0], distances, strict=True)
            )
        hits.sort(key=lambda h: h.similarity, reverse=True)
        return hits[:n]

    def vectors(self, ids: Sequence[str], *, scopes: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these lessons (those found in the given scopes)."""
        found: dict[str, list[float]] = {}
        if not ids:
            return found
        for scope in dict.fromkeys(scopes):
            collection = self._scope(scope, create=False)
            if collection is None:
                continue
            try:
                page = collection.get(ids=list(ids), include=["embeddings"])
            except _chroma_errors() as exc:
                raise MemoryBackendError(f"cannot read the vector index: {exc}") from exc
            embeddings = page["embeddings"]
            if embeddings is None:
                continue
            for lesson_id, vec in zip(page["ids"], embeddings, strict=True):
                found[lesson_id] = [float(x) for x in vec]
        return found


def _query(
    collection: Collection,
    query_vec: Any,
    n: int,
    where: Mapping[str, Any] | None,
    ids: list[str] | None,
) -> Any:
    """One collection's query. chromadb refuses a query naming an id it does not hold (a
    lesson SQL has but the index not yet, or lost: `check` reports those), so on that
    refusal the ids it holds are read and the query asked again with them alone."""
    from chromadb.errors import InternalError

    def ask(among: list[str] | None) -> Any:
        return collection.query(
            query_embeddings=query_vec,
            n_results=n,
            where=dict(where) if where else None,
            ids=among,
            include=["distances"],
        )

    try:
        return ask(ids)
    except InternalError:
        if ids is None:
            raise
        held = list(collection.get(ids=ids, include=[])["ids"])
        if not held:
            return {"ids": [[]], "distances": [[]]}
        return ask(held)


def lesson_metadata(scope: str, error_type: str, model_id: str) -> Metadata:
    """The index metadata of one lesson (what recall filters on, what drift checks compare)."""
    return {"scope": scope, "error_type": error_type, "embedding_model": model_id}
