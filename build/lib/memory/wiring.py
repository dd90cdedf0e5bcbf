"""How `Memory.open` finds and wires its parts: locations, model bookkeeping, client cleanup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import select

from memory.db import Database, sql_url
from memory.embeddings import Embedder
from memory.schema import LessonRow, MetaRow

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


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


def save_model(db: Database, embedder: Embedder) -> None:
    with db.write(lock_scope="__meta__") as session:
        for key, value in (
            ("embedding_model", embedder.model_id),
            ("embedding_dim", str(embedder.dim)),
        ):
            row = session.get(MetaRow, key, with_for_update=True)
            if row is None:
                session.add(MetaRow(key=key, value=value))
            elif row.value != value:
                row.value = value
                session.add(row)
