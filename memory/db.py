"""SQL engine and transactions, with the locking that makes dedup-on-write race-free.

Writers that must see every committed lesson of a scope before deciding "new or duplicate"
take a lock first:
- PostgreSQL: `pg_advisory_xact_lock(key(scope))`, released at commit/rollback; writers of
  other scopes do not wait.
- SQLite: `BEGIN IMMEDIATE` takes the database write lock up front (WAL keeps readers going;
  `busy_timeout` makes other writers wait instead of failing).
Other backends get no extra lock (documented limitation: single writer only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DatabaseError, InternalError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, create_engine

from memory.errors import MemoryBackendError, MemoryConfigError, read_only, read_only_store
from memory.migrate import upgrade

_WRITE_OPTION = "lessonloop_write"


def backend_failed(exc: DatabaseError) -> bool:
    """The database failed, not our statement: away, full, I/O, internal, or the DBAPI's
    plain DatabaseError (SQLite's "database disk image is malformed"). An integrity,
    programming or data error stays what it is: a constraint the caller expects, or a bug."""
    return isinstance(exc, OperationalError | InternalError) or type(exc) is DatabaseError


SQLITE_BUSY_TIMEOUT_MS = 30_000


def sql_url(url_or_path: str) -> str:
    """An SQLAlchemy URL from a URL or a filesystem path (a path means an SQLite file).

    `postgresql://` is pinned to the psycopg 3 driver we depend on: SQLAlchemy's default
    for that scheme is psycopg2, which is not installed.
    """
    if "://" not in url_or_path:
        return f"sqlite:///{Path(url_or_path).expanduser().resolve()}"
    for prefix in ("postgresql://", "postgres://"):
        if url_or_path.startswith(prefix):
            return "postgresql+psycopg://" + url_or_path[len(prefix) :]
    return url_or_path


def _lock_key(scope: str) -> int:
    # A stable signed 64-bit key; Python's hash() is salted per process, so it cannot be used.
    digest = hashlib.blake2b(f"lessonloop:{scope}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _sqlite_engine(url: str) -> Engine:
    in_memory = make_url(url).database in (None, "", ":memory:")
    if in_memory:
        # One shared connection: each new connection to ":memory:" would be a new, empty DB.
        engine = create_engine(url, connect_args={"check_same_thread": False}, poolclass=StaticPool)
    else:
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take over BEGIN from pysqlite so write transactions can say BEGIN IMMEDIATE.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if not in_memory:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            # A 64 MiB page cache (default 2 MiB) per connection, grown only as pages are
            # used: a consolidation pass rewrites thousands of rows spread over the whole
            # file per transaction, and with the small cache SQLite spills dirty pages to the
            # WAL and reads them back (-25 % CPU for 4k-row merge batches on a 100k store).
            cur.execute("PRAGMA cache_size=-65536")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """The SQL side of the store: schema creation, read and locked write transactions."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name

    @classmethod
    def connect(cls, url_or_path: str) -> Database:
        """Engine for a path (SQLite file) or SQLAlchemy URL; creates or upgrades the schema."""
        url = sql_url(url_or_path)
        try:
            if url.startswith("sqlite"):
                engine = _sqlite_engine(url)
            else:
                engine = create_engine(url, pool_pre_ping=True)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise MemoryConfigError(f"cannot open SQL store {url!r}: {exc}") from exc
        db = cls(engine)
        try:
            db.create_schema()
        except BaseException:
            engine.dispose()  # a refused store must not keep its connections open
            raise
        return db

    def create_schema(self) -> None:
        """Create every table, or migrate an older store (idempotent, safe when several
        processes start at once: the schema lock serialises them). See `memory.migrate`."""
        try:
            with self.write("__schema__") as session:
                upgrade(session)
        except SQLAlchemyError as exc:
            file = self.engine.url.database if self.engine.url.drivername == "sqlite" else None
            cause = getattr(exc, "orig", None) or exc
            where = read_only(cause, Path(file), Path(file).parent) if file else None
            if where is not None:
                raise MemoryBackendError(read_only_store(where, cause)) from exc
            raise MemoryBackendError(f"cannot create memory tables: {exc}") from exc

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reads; nothing is committed."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
            except DatabaseError as exc:
                if not backend_failed(exc):
                    raise
                # The database is away or broken (server stopped, unreadable file, damaged
                # pages): the operator has to act, as for a failed write.
                raise MemoryBackendError(f"the SQL store could not be read: {exc.orig}") from exc

    @contextmanager
    def write(self, lock_scope: str | None = None) -> Iterator[Session]:
        """A write transaction, committed on success, rolled back on error.

        With `lock_scope`, writers of the same scope are serialised (see module docstring),
        so a read-decide-write sequence inside the block cannot race another process.
        """
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn.execution_options(**{_WRITE_OPTION: True})
            with Session(bind=conn, expire_on_commit=False) as session:
                if lock_scope is not None and self.dialect == "postgresql":
                    session.execute(
                        text("SELECT pg_advisory_xact_lock(:k)"), {"k": _lock_key(lock_scope)}
                    )
                try:
                    yield session
                    session.commit()
                except DatabaseError as exc:
                    session.rollback()
                    if not backend_failed(exc):
                        raise
                    # The database itself failed (disk full, I/O error, gone, damaged pages):
                    # nothing of this transaction is stored; the operator has to act.
                    raise MemoryBackendError(f"the SQL store could not write: {exc.orig}") from exc
                except BaseException:
                    session.rollback()
                    raise

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()
