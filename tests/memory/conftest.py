"""Fixtures of the memory tests: store kinds for the contract suite, real servers for server mode.

Kinds:
- `sqlite`: SQLite file + embedded chromadb (`PersistentClient`) in tmp_path (the default).
- `postgres`: PostgreSQL 15 + a Chroma server, both started here (server mode).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_servers import (
    SERVER_MARKS,
    ChromaServer,
    Postgres,
    StoreSpec,
    make_spec,
    start_chroma,
    start_postgres,
)

from memory import Memory

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


@pytest.fixture(params=STORE_KINDS)
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return make_spec(request.param, request, tmp_path)


@pytest.fixture
def store(spec: StoreSpec) -> Iterator[Memory]:
    memory = spec.open()
    yield memory
    memory.close()
