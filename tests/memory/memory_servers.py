"""Start and stop real PostgreSQL 15 and Chroma servers for the contract suite.

Missing binaries FAIL the tests (CI installs them); they never skip silently.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory import HashEmbedder, Memory
from memory.embeddings import Embedder

PG_BIN_CANDIDATES = (Path("/usr/lib/postgresql/15/bin"),)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _pg_bin() -> Path:
    env = os.environ.get("LESSONLOOP_PG_BIN")
    # Prefer 15 (what CI installs), else the newest version present.
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: p.parent.name)
    candidates = [Path(env)] if env else [*PG_BIN_CANDIDATES, *reversed(installed)]
    which = shutil.which("pg_ctl")
    if which:
        candidates.append(Path(which).parent)
    for cand in candidates:
        if (cand / "initdb").exists() and (cand / "pg_ctl").exists():
            return cand
    pytest.fail(
        "PostgreSQL 15 server binaries not found (looked in "
        f"{', '.join(map(str, candidates))}): install Debian package postgresql-15 "
        "or set LESSONLOOP_PG_BIN to the directory holding initdb and pg_ctl",
        pytrace=False,
    )


def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb/postgres refuse to run as root; drop to the `postgres` user when we are root.
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.fail("running as root needs `runuser` (util-linux) to start PostgreSQL")
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


@dataclass
class Postgres:
    bin_dir: Path
    data_dir: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        subprocess.run(
            _as_postgres(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "stop"]
            ),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def start_postgres() -> Postgres:
    bin_dir = _pg_bin()
    # Not under pytest's tmp dir: that is 0700 root-owned and the postgres user cannot enter.
    root = Path(tempfile.mkdtemp(prefix="lessonloop-pg-"))
    data = root / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(data, "postgres")
        root.chmod(0o755)
    port = free_port()
    init = subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ]
        ),
        capture_output=True,
        text=True,
    )
    if init.returncode != 0:
        pytest.fail(f"initdb failed: {init.stderr}", pytrace=False)
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={root}"
    start = subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                opts,
                "-l",
                str(root / "log"),
                "-w",
                "start",
            ]
        ),
        capture_output=True,
        text=True,
    )
    if start.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        pytest.fail(f"pg_ctl start failed: {start.stderr}\n{log}", pytrace=False)
    return Postgres(bin_dir=bin_dir, data_dir=data, port=port)


def _chroma_cli() -> str:
    beside_python = Path(sys.executable).parent / "chroma"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("chroma")
    if found is None:
        pytest.fail(
            "the `chroma` CLI (installed by the chromadb package) was not found", pytrace=False
        )
    return found


@dataclass
class ChromaServer:
    process: subprocess.Popen[bytes]
    port: int
    path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.path, ignore_errors=True)


def start_chroma(timeout_s: float = 60.0) -> ChromaServer:
    cli = _chroma_cli()
    path = Path(tempfile.mkdtemp(prefix="lessonloop-chroma-"))
    port = free_port()
    log_path = path / "server.log"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [cli, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(path / "data")],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + timeout_s
    url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"chroma server exited with {proc.returncode}; log: {log_path}", pytrace=False
            )
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return ChromaServer(process=proc, port=port, path=path)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    proc.kill()
    pytest.fail(f"chroma server did not answer {url} within {timeout_s}s", pytrace=False)


SERVER_MARKS = [pytest.mark.postgres, pytest.mark.chroma_server]


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
