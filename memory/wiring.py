"""How `Memory.open` finds and wires its parts: locations, model bookkeeping, client cleanup."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from sqlmodel import select

from memory.db import Database, sql_url
from memory.embeddings import Embedder
from memory.errors import MemoryConfigError, read_only
from memory.index import embedded_client, http_client
from memory.matchtext import INDEX_TEXT_VERSION
from memory.schema import LessonRow, MetaRow

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
INDEX_TEXT_KEY = "index_text_version"


def locations(url_or_path: str, chroma_path: str | Path | None) -> tuple[str, Path | None]:
    """(SQL URL, embedded chroma dir) for `Memory.open`."""
    if chroma_path is not None:
        return sql_url(url_or_path), Path(chroma_path).expanduser()
    if "://" not in url_or_path:
        path = Path(url_or_path).expanduser()
        if path.suffix in _SQLITE_SUFFIXES:
            return sql_url(str(path)), path.with_suffix(".chroma")
        path.mkdir(parents=True, exist_ok=True)
        return sql_url(str(path / "memory.sqlite3")), path / "chroma"
    url = sql_url(url_or_path)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return url, Path(url[len("sqlite:///") :]).with_suffix(".chroma")
    return url, None


def missing_store(url_or_path: str) -> str | None:
    """Why no local store is at `url_or_path`, or None: one is there, or it is a server's URL
    (only connecting can tell). A file that is not a lessonloop store (empty, another
    program's database, not SQLite) is no store: a reading command must not make it one."""
    if "://" in url_or_path:
        url = sql_url(url_or_path)
        if not url.startswith("sqlite:///") or url == "sqlite:///:memory:":
            return None
        file = Path(url[len("sqlite:///") :])
    else:
        path = Path(url_or_path).expanduser()
        file = path if path.suffix in _SQLITE_SUFFIXES else path / "memory.sqlite3"
    if not file.is_file():
        return f"no memory store at {url_or_path}"
    try:
        with closing(sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)) as con:
            found = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (LessonRow.__tablename__,),
            ).fetchone()
    except sqlite3.DatabaseError as exc:
        if read_only(exc, file, file.parent) is not None:
            return None  # a store on read-only media: opening it says so (`Database.connect`)
        return f"{file} is not a lessonloop store ({exc})"
    return None if found else f"{file} is not a lessonloop store (it holds no lessons table)"


def connect(
    url_or_path: str, *, chroma_url: str | None, chroma_path: str | Path | None
) -> tuple[Database, Any]:
    """The SQL database and the chromadb client of `Memory.open` (see its docstring)."""
    try:
        url, local_chroma = locations(url_or_path, chroma_path)
        if chroma_url is not None:
            client = http_client(chroma_url)
        elif local_chroma is not None:
            client = embedded_client(local_chroma)
        else:
            raise MemoryConfigError(
                f"{url_or_path!r} is not a local SQLite store: pass chroma_url (a Chroma "
                "server; LESSONLOOP_CHROMA_URL for the CLI) or chroma_path (an embedded "
                "index directory)"
            )
    except OSError as exc:
        # e.g. a directory that cannot be created: the operator must choose another place.
        raise MemoryConfigError(f"cannot create or open the store at {url_or_path}: {exc}") from exc
    try:
        return Database.connect(url), client
    except BaseException:
        close_client(client)
        raise


def close_client(client: Any) -> None:
    # chromadb >= 1.1 clients hold sockets / SQLite handles until closed (refcounted: the
    # shared System stops when its last client closes).
    close = getattr(client, "close", None)
    if close is None:
        return
    # chromadb 1.5 does not close the HTTP connection pools (the client's and its internal
    # admin client's) when the System stops, which leaks sockets; close them ourselves, but
    # only once no other client in this process shares them.
    owners = (client, getattr(client, "_admin_client", None))
    sessions = [getattr(getattr(o, "_server", None), "_session", None) for o in owners]
    identifier = getattr(client, "_identifier", None)
    close()
    from chromadb.api.shared_system_client import SharedSystemClient

    if identifier not in SharedSystemClient._identifier_to_system:
        for session in sessions:
            if session is not None and hasattr(session, "close"):
                session.close()


def stored_model(db: Database) -> tuple[str, int] | None:
    with db.read() as session:
        model = session.get(MetaRow, "embedding_model")
        dim = session.get(MetaRow, "embedding_dim")
        if model is None or dim is None:
            return None
        return model.value, int(dim.value)


def holds_lessons(db: Database) -> bool:
    """Whether any lesson row exists (an empty store has no vectors to mix up)."""
    with db.read() as session:
        return session.exec(select(LessonRow.id).limit(1)).first() is not None


def stored_index_text_version(db: Database) -> int | None:
    """The `memory.matchtext.INDEX_TEXT_VERSION` the index was built with; None before
    versions were recorded (version 1: symptom + root cause as written)."""
    with db.read() as session:
        row = session.get(MetaRow, INDEX_TEXT_KEY)
        return int(row.value) if row is not None else None


def index_text_outdated(db: Database) -> bool:
    """Whether the index holds lessons embedded from another index text: rebuild it.

    Older or missing: written before the text changed. Newer (a newer lessonloop wrote it):
    rebuilt too, because this code's queries are read by this code's rules, and the record
    then says so (a newer lessonloop rebuilds it again). The index is derived from SQL, so a
    rebuild is always right, only slow."""
    return stored_index_text_version(db) != INDEX_TEXT_VERSION and holds_lessons(db)


def save_model(db: Database, embedder: Embedder) -> None:
    """Record the embedding model and the index text version the index now holds."""
    with db.write(lock_scope="__meta__") as session:
        for key, value in (
            ("embedding_model", embedder.model_id),
            ("embedding_dim", str(embedder.dim)),
            (INDEX_TEXT_KEY, str(INDEX_TEXT_VERSION)),
        ):
            row = session.get(MetaRow, key, with_for_update=True)
            if row is None:
                session.add(MetaRow(key=key, value=value))
            elif row.value != value:
                row.value = value
                session.add(row)
