"""A named lease in SQL with an expiry: one consolidator at a time, across processes/machines.

Acquire is compare-and-set on (holder, expires_at): a free or expired lease is taken by
exactly one contender (primary-key insert, or an UPDATE that matches the old values), and a
holder that dies simply lets it expire. Holders renew while they work; a renew that finds
the lease taken over raises `LeaseLostError`, and the holder must stop writing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict
from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from memory.db import Database
from memory.errors import MemoryUsageError
from memory.schema import LeaseRow, aware
from memory.types import utcnow


class LeaseLostError(MemoryUsageError):
    """The lease expired and another holder took it: stop writing."""


class Lease(BaseModel):
    """A held lease."""

    model_config = ConfigDict(frozen=True)

    name: str
    holder: str
    expires_at: datetime


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
            if row.holder != holder and aware(row.expires_at) > now:
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
        if row is None or aware(row.expires_at) <= utcnow():
            return None
        return Lease(name=row.name, holder=row.holder, expires_at=aware(row.expires_at))
