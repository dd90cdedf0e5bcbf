"""A named lease in SQL with an expiry: one consolidator at a time, across processes/machines.

Acquire is compare-and-set on (holder, expires_at): a free or expired lease is taken by
exactly one contender (primary-key insert, or an UPDATE that matches the old values), and a
holder that dies simply lets it expire. Holders renew while they work; a renew that finds
the lease taken over raises `LeaseLostError`, and the holder must stop writing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import DateTime, delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Column, Field, SQLModel, col

from memory.db import Database
from memory.errors import MemoryUsageError
from memory.schema import utcnow


class LeaseLostError(MemoryUsageError):
    """The lease expired and another holder took it: stop writing."""


class LeaseRow(SQLModel, table=True):
    """Who holds the named lease, until when."""

    __tablename__ = "leases"

    name: str = Field(primary_key=True, max_length=100)
    holder: str = Field(max_length=200)
    expires_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    acquired_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


LEASE_TABLES: list[Any] = [LeaseRow.__table__]  # type: ignore[attr-defined]


class Lease(BaseModel):
    """A held lease."""

    model_config = ConfigDict(frozen=True)

    name: str
    holder: str
    expires_at: datetime


def ensure_tables(db: Database) -> None:
    """Create the lease table if missing (idempotent)."""
    with db.write("__schema__") as session:
        for table in LEASE_TABLES:
            table.create(session.connection(), checkfirst=True)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def acquire(db: Database, name: str, holder: str, ttl_s: float) -> Lease | None:
    """Take the lease if it is free, expired, or already ours; None if someone else holds it."""
    now = utcnow()
    expires = now + timedelta(seconds=ttl_s)
    try:
        with db.write(lock_scope=f"lease:{name}") as session:
            row = session.get(LeaseRow, name)
            if row is None:
                session.add(LeaseRow(name=name, holder=holder, expires_at=expires, acquired_at=now))
                session.flush()
                return Lease(name=name, holder=holder, expires_at=expires)
            if row.holder != holder and _aware(row.expires_at) > now:
                return None
            # Compare-and-set on the values we read: a concurrent taker makes this match 0 rows.
            taken = session.execute(
                update(LeaseRow)
                .where(col(LeaseRow.name) == name)
                .where(col(LeaseRow.holder) == row.holder)
                .where(col(LeaseRow.expires_at) == row.expires_at)
                .values(holder=holder, expires_at=expires, acquired_at=now)
                .execution_options(synchronize_session=False)
            )
            if taken.rowcount != 1:  # type: ignore[attr-defined]
                return None
            return Lease(name=name, holder=holder, expires_at=expires)
    except IntegrityError:
        return None  # another process inserted the row first


def renew(db: Database, lease: Lease, ttl_s: float) -> Lease:
    """Extend a held lease; `LeaseLostError` if it expired and was taken over meanwhile."""
    now = utcnow()
    expires = now + timedelta(seconds=ttl_s)
    with db.write(lock_scope=f"lease:{lease.name}") as session:
        done = session.execute(
            update(LeaseRow)
            .where(col(LeaseRow.name) == lease.name)
            .where(col(LeaseRow.holder) == lease.holder)
            .values(expires_at=expires)
            .execution_options(synchronize_session=False)
        )
        if done.rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLostError(f"lease {lease.name!r} is no longer held by {lease.holder}")
    return lease.model_copy(update={"expires_at": expires})


def release(db: Database, lease: Lease) -> None:
    """Give the lease up (no-op if it was already taken over)."""
    with db.write(lock_scope=f"lease:{lease.name}") as session:
        session.execute(
            delete(LeaseRow)
            .where(col(LeaseRow.name) == lease.name)
            .where(col(LeaseRow.holder) == lease.holder)
        )


def holder_of(db: Database, name: str) -> Lease | None:
    """The current unexpired holder, if any."""
    with db.read() as session:
        row = session.get(LeaseRow, name)
        if row is None or _aware(row.expires_at) <= utcnow():
            return None
        return Lease(name=row.name, holder=row.holder, expires_at=_aware(row.expires_at))
