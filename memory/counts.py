"""Per (scope, error type) change counters that the database keeps itself, by triggers.

Caches built from SQL (recall's BM25 postings per scope, the dedup vectors the write path
compares a draft with) must know cheaply whether SQL moved. Counting a 100k-lesson scope
costs 30-70 ms in SQLite, more than a whole recall may take; reading one row per error type
costs microseconds. So the `lesson_counts` table holds, per (scope, error type):

- `generation`: bumped by every insert, delete and change of a lesson's scope, error type,
  status, texts or dedup vector (not by the use counters, which recall does not index);
- `recallable`: lessons whose status is candidate or validated (what BM25 indexes);
- `unmerged`: lessons whose status is not merged (what dedup compares with).

Triggers keep it, so every writer is covered, in any process, whatever path it takes
(the ORM, a bulk insert, a merge, an import, a migration), in the writer's transaction: a
reader sees the counts and the rows of the same commit. SQLite and PostgreSQL get the same
counters (SQL triggers vs a PL/pgSQL trigger function); other backends get no triggers and
the caches then fall back to counting (`CountsUnavailable`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text
from sqlmodel import Session

from memory.types import ACTIVE

_RECALLABLE = "(" + ", ".join(f"'{status}'" for status in ACTIVE) + ")"
_TRACKED = "scope, error_type, status, symptom, root_cause, fix, dedup_vector, embedding_model"


def _delta(row: str, sign: str) -> str:
    """Column values (generation, recallable, unmerged) a row adds (+) or removes (-)."""
    return (
        f"1, {sign}(CASE WHEN {row}.status IN {_RECALLABLE} THEN 1 ELSE 0 END), "
        f"{sign}(CASE WHEN {row}.status <> 'merged' THEN 1 ELSE 0 END)"
    )


def _upsert(row: str, sign: str) -> str:
    return (
        "INSERT INTO lesson_counts (scope, error_type, generation, recallable, unmerged) "
        f"VALUES ({row}.scope, {row}.error_type, {_delta(row, sign)}) "
        "ON CONFLICT (scope, error_type) DO UPDATE SET "
        "generation = lesson_counts.generation + 1, "
        "recallable = lesson_counts.recallable + excluded.recallable, "
        "unmerged = lesson_counts.unmerged + excluded.unmerged"
    )


_SQLITE = [
    f"CREATE TRIGGER IF NOT EXISTS lessons_count_insert AFTER INSERT ON lessons "
    f"BEGIN {_upsert('NEW', '')}; END",
    f"CREATE TRIGGER IF NOT EXISTS lessons_count_delete AFTER DELETE ON lessons "
    f"BEGIN {_upsert('OLD', '-')}; END",
    f"CREATE TRIGGER IF NOT EXISTS lessons_count_update AFTER UPDATE OF {_TRACKED} ON lessons "
    f"BEGIN {_upsert('OLD', '-')}; {_upsert('NEW', '')}; END",
]

_POSTGRES = [
    f"""
    CREATE OR REPLACE FUNCTION lessonloop_count_lessons() RETURNS trigger AS $$
    BEGIN
        IF TG_OP IN ('DELETE', 'UPDATE') THEN {_upsert("OLD", "-")}; END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN {_upsert("NEW", "")}; END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql
    """,
    "DROP TRIGGER IF EXISTS lessons_count_insert_delete ON lessons",
    "CREATE TRIGGER lessons_count_insert_delete AFTER INSERT OR DELETE ON lessons "
    "FOR EACH ROW EXECUTE FUNCTION lessonloop_count_lessons()",
    "DROP TRIGGER IF EXISTS lessons_count_update ON lessons",
    f"CREATE TRIGGER lessons_count_update AFTER UPDATE OF {_TRACKED} ON lessons "
    "FOR EACH ROW EXECUTE FUNCTION lessonloop_count_lessons()",
]


def install(conn: Connection) -> None:
    """Create the triggers and fill `lesson_counts` from the lessons (idempotent)."""
    statements = {"sqlite": _SQLITE, "postgresql": _POSTGRES}.get(conn.dialect.name)
    if statements is None:
        return  # no triggers: readers count instead (see `CountsUnavailable`)
    for statement in statements:
        conn.execute(text(statement))
    conn.execute(text("DELETE FROM lesson_counts"))
    conn.execute(
        text(
            "INSERT INTO lesson_counts (scope, error_type, generation, recallable, unmerged) "
            f"SELECT scope, error_type, 1, "
            f"SUM(CASE WHEN status IN {_RECALLABLE} THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN status <> 'merged' THEN 1 ELSE 0 END) "
            "FROM lessons GROUP BY scope, error_type"
        )
    )


class CountsUnavailable(Exception):
    """This backend keeps no counters (no triggers): the caller must count itself."""


@dataclass(frozen=True)
class Counts:
    """The counters of a set of (scope, error type) pairs, summed."""

    generation: int
    recallable: int
    unmerged: int


def read(session: Session, scope: str, error_types: Sequence[str] | None = None) -> Counts:
    """The counters of `scope` (all its error types, or only `error_types`), summed.

    A generation only grows, so the sum changes whenever any of its pairs changed.
    """
    if session.get_bind().dialect.name not in ("sqlite", "postgresql"):
        raise CountsUnavailable(session.get_bind().dialect.name)
    sql = (
        "SELECT COALESCE(SUM(generation), 0), COALESCE(SUM(recallable), 0), "
        "COALESCE(SUM(unmerged), 0) FROM lesson_counts WHERE scope = :scope"
    )
    params: dict[str, object] = {"scope": scope}
    if error_types is not None:
        names = [f"t{i}" for i in range(len(error_types))]
        sql += f" AND error_type IN ({', '.join(':' + n for n in names)})" if names else " AND 0=1"
        params.update(zip(names, error_types, strict=True))
    generation, recallable, unmerged = session.execute(text(sql), params).one()
    return Counts(int(generation), int(recallable), int(unmerged))


def read_each(session: Session, scope: str, error_types: Sequence[str] | None) -> dict[str, Counts]:
    """The counters of each of `error_types` in `scope` in one read (zeros for a pair
    without lessons); None: of every error type the scope has had."""
    if session.get_bind().dialect.name not in ("sqlite", "postgresql"):
        raise CountsUnavailable(session.get_bind().dialect.name)
    found = dict.fromkeys(error_types or (), Counts(0, 0, 0))
    if error_types is not None and not error_types:
        return found
    sql = "SELECT error_type, generation, recallable, unmerged FROM lesson_counts "
    params: dict[str, object] = {"scope": scope}
    if error_types is None:
        sql += "WHERE scope = :scope"
    else:
        names = [f"t{i}" for i in range(len(error_types))]
        sql += f"WHERE scope = :scope AND error_type IN ({', '.join(':' + n for n in names)})"
        params.update(zip(names, error_types, strict=True))
    rows = session.execute(text(sql), params).all()
    for error_type, generation, recallable, unmerged in rows:
        found[error_type] = Counts(int(generation), int(recallable), int(unmerged))
    return found
