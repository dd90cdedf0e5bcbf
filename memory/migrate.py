"""The store's schema version, and the migrations that bring an older store up to date.

The version lives in `memory_meta` under `schema_version`. On connect (`Database.connect`),
inside one schema-locked write transaction:

- a store with no tables at all is created at `SCHEMA_VERSION`;
- a store without a recorded version is version 1 (what lessonloop wrote before versions
  were recorded: `lessons`, `runs`, `lesson_uses`, `memory_meta`, and the other tables
  only once something had used them);
- every migration from the stored version up to `SCHEMA_VERSION` runs in order, then the
  new version is recorded;
- a store of a newer version than this code knows is refused (`MemoryConfigError`): an
  older lessonloop must not write into a schema it does not understand.

A schema change adds one function to `MIGRATIONS` and bumps `SCHEMA_VERSION`; a test opens a
store of the previous version (tests/memory/test_migrate.py keeps one of version 1).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, inspect, text
from sqlmodel import Session

from memory import counts
from memory.errors import MemoryConfigError
from memory.schema import TABLES, MetaRow

SCHEMA_VERSION = 6
VERSION_KEY = "schema_version"

Migration = Callable[[Connection], None]


def _v1_to_v2(conn: Connection) -> None:
    # Version 1 created the merge, vector, lease and review tables lazily, on first use;
    # version 2 has every table from the start.
    for table in TABLES:
        table.create(conn, checkfirst=True)


def _add_indexes(conn: Connection) -> None:
    # Indexes that a table created by an older version lacks. Version 3 pages the lesson
    # list by (created_at, id) and (updated_at, id); version 6 indexes merged members by
    # scope and error type (recall's typed search, `memory.queries.canonicals_of`).
    for table in TABLES:
        for index in table.indexes:
            index.create(conn, checkfirst=True)


def _v3_to_v4(conn: Connection) -> None:
    # Version 4 keeps change counters by triggers (memory.counts) and indexes what changed
    # since a cache looked: recall and dedup no longer read a whole scope to find out.
    for table in TABLES:
        table.create(conn, checkfirst=True)
        for index in table.indexes:
            index.create(conn, checkfirst=True)
    counts.install(conn)


def _v4_to_v5(conn: Connection) -> None:
    # Version 5 records why a run ended without an outcome (`runs.error`): such a run read
    # as "running" forever.
    if "error" not in {c["name"] for c in inspect(conn).get_columns("runs")}:
        conn.execute(text("ALTER TABLE runs ADD COLUMN error TEXT NOT NULL DEFAULT ''"))


# MIGRATIONS[n] takes a store from version n to n + 1.
MIGRATIONS: dict[int, Migration] = {
    1: _v1_to_v2,
    2: _add_indexes,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _add_indexes,
}


def stored_version(session: Session) -> int | None:
    """The recorded schema version; None when the store predates recorded versions."""
    if not inspect(session.connection()).has_table(MetaRow.__tablename__):
        return None
    row = session.get(MetaRow, VERSION_KEY)
    return int(row.value) if row is not None else None


def upgrade(session: Session) -> int:
    """Create or migrate the schema inside `session` (a schema-locked write); the old version.

    Returns the version found (0 for a new store).
    """
    conn = session.connection()
    inspector = inspect(conn)
    fresh = not inspector.has_table("lessons")
    found = 0 if fresh else (stored_version(session) or 1)
    if found > SCHEMA_VERSION:
        raise MemoryConfigError(
            f"the store has schema version {found}, newer than this lessonloop knows "
            f"({SCHEMA_VERSION}): upgrade lessonloop to open it"
        )
    if fresh:
        for table in TABLES:
            table.create(conn, checkfirst=True)
        counts.install(conn)
    else:
        for version in range(found, SCHEMA_VERSION):
            MIGRATIONS[version](conn)
    if found != SCHEMA_VERSION:
        row = session.get(MetaRow, VERSION_KEY)
        if row is None:
            session.add(MetaRow(key=VERSION_KEY, value=str(SCHEMA_VERSION)))
        else:
            row.value = str(SCHEMA_VERSION)
            session.add(row)
        session.flush()
    return found
