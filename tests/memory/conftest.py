"""Fixtures of the memory tests: store kinds for the contract suite, real servers for server mode.

Kinds:
- `sqlite`: SQLite file + embedded chromadb (`PersistentClient`) in tmp_path (the default).
- `postgres`: PostgreSQL 15 + a Chroma server, both started here (server mode).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from memory_servers import ChromaServer, Postgres, start_chroma, start_postgres

from memory import HashEmbedder, Memory
from memory.embeddings import Embedder

SERVER_MARKS = [pytest.mark.postgres, pytest.mark.chroma_server]
STORE_KINDS = ["sqlite", pytest.param("postgres", marks=SERVER_MARKS)]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Postgres]:
    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[ChromaServer]:
    server = start_chroma()
    yield server
    server.stop()


@dataclass(frozen=True)
class StoreSpec:
    """Where a store lives; `open` can be called again to reopen the same store."""

    kind: str
    url: str
    chroma_url: str | None
    collection: str

    def open(self, embedder: Embedder | None = None, **options: Any) -> Memory:
        return Memory.open(
            self.url,
            embedder=embedder if embedder is not None else HashEmbedder(),
            chroma_url=self.chroma_url,
            collection=self.collection,
            **options,
        )


def make_spec(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    """A fresh, empty store location of the given kind."""
    name = f"t{uuid.uuid4().hex[:12]}"
    if kind == "sqlite":
        return StoreSpec(kind, str(tmp_path / f"{name}.sqlite3"), None, "lessons")
    chroma: ChromaServer = request.getfixturevalue("chroma_server")
    if kind == "sqlite-server":  # SQLite file (WAL) shared by processes + a Chroma server
        return StoreSpec(kind, str(tmp_path / f"{name}.sqlite3"), chroma.url, f"lessons-{name}")
    pg: Postgres = request.getfixturevalue("pg_server")
    return StoreSpec(kind, pg.create_database(name), chroma.url, f"lessons-{name}")


@pytest.fixture(params=STORE_KINDS)
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return make_spec(request.param, request, tmp_path)


@pytest.fixture
def store(spec: StoreSpec) -> Iterator[Memory]:
    memory = spec.open()
    yield memory
    memory.close()
