"""Merges: a consolidation merge written in one SQL transaction, and undone exactly.

The rows live in `memory.schema`: `lesson_merges` (members, canonical, whether the merge
created the canonical, before-snapshots of every lesson row it touched (a member's without
the dedup vector the merge leaves alone), the canonical's state right after) and
`consolidation_vectors` (see `memory.vectors`).

Writing is `memory.merge_write.apply_merges`, compare-and-set (`unchanged`): it re-reads
every lesson inside the write transaction and gives up on a merge (None) when one changed
since the plan was made, so two consolidators that race past the lease still cannot merge a
lesson twice. The merges of one call commit together, one transaction per scope (a crash
leaves each such batch whole or absent in SQL, never half a merge); the index is written
after the commits (`memory.commit`). Undo restores the before-snapshots exactly.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlmodel import Session, col, select

from memory.commit import AfterCommitHook, IndexChanges, Written, write_through_each
from memory.db import Database
from memory.embeddings import Embedder
from memory.errors import LessonNotFoundError, MemoryUsageError
from memory.index import LessonIndex
from memory.schema import (
    INDEX_PENDING,
    LessonRow,
    MergeRow,
    RootCauseVectorRow,
    aware,
)
from memory.types import ACTIVE, Lesson, LessonText, MergedCounts, utcnow

_SQL_CHUNK = 900  # SQLite caps the bound parameters of one statement


class MergeNotFoundError(LessonNotFoundError):
    """No merge record with that id."""


class MergeConflictError(MemoryUsageError):
    """The lessons of a merge changed after it (undo later merges first, or it was undone)."""


class MergePlan(LessonText, MergedCounts):
    """What a merge will write: the canonical's text and counters, decided by consolidation.

    `expected` holds each touched lesson's `updated_at` (compare-and-set). The store embeds
    the canonical text itself; a new canonical takes the root-cause vector of `leader_id`,
    since it stands for the leader's cluster in later passes.
    """

    scope: str
    error_type: str
    canonical_id: str | None  # fold into this existing canonical; None: create one
    leader_id: str
    member_ids: tuple[str, ...]  # lessons that become status "merged"
    expected: dict[str, datetime]
    written_by: str = ""


class MergeRecord(BaseModel):
    """A stored merge (without the snapshots)."""

    model_config = ConfigDict(frozen=True)

    id: str
    scope: str
    error_type: str
    canonical_id: str
    created_canonical: bool
    member_ids: tuple[str, ...]
    written_by: str
    created_at: datetime
    undone_at: datetime | None = None


# A merge changes a member's status, merged_into and updated_at, never its dedup vector:
# a member's snapshot leaves that out (at 100k lessons it was a base64 kilobyte per member,
# about 140 MB of JSON a full pass wrote and undo never needed).
MEMBER_UNCHANGED = frozenset({"dedup_vector"})


# The counters runs move (`memory.runs`); a merge's canonical starts from its members' sums.
USE_COUNTERS = ("recalled", "helped", "misled")


def snapshot(row: Mapping[str, Any], *, leave_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Every column of a lesson row (its column values), but `leave_out`, as JSON (bytes
    base64, datetimes ISO). `restore` puts back what a snapshot holds, nothing else."""
    data: dict[str, Any] = {}
    for name in LessonRow.model_fields:
        if name in leave_out:
            continue
        value = row[name]
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode()
        elif isinstance(value, datetime):
            value = aware(value).isoformat()
        elif isinstance(value, list):
            value = list(value)
        data[name] = value
    return data


def restore(row: LessonRow, data: dict[str, Any]) -> None:
    """Put a snapshot back into `row` (the inverse of `snapshot`).

    Not `index_state`: it says whether the index write finished, which happened (or not)
    after the snapshot; undo writes the index itself. Restoring it left lessons that were
    merged mid-write "pending" forever.
    """
    for name, value in data.items():
        if name == "index_state":
            continue
        if name == "dedup_vector":
            value = base64.b64decode(value)
        elif name in ("created_at", "updated_at"):
            value = datetime.fromisoformat(value)
        setattr(row, name, value)


def _counted_since(row: LessonRow, before: dict[str, Any]) -> bool:
    """A member's use counters moved after its snapshot (restoring would drop that)."""
    return any(name in before and getattr(row, name) != before[name] for name in USE_COUNTERS)


def to_record(row: MergeRow) -> MergeRecord:
    """Frozen view of a merge row."""
    return MergeRecord(
        id=row.id,
        scope=row.scope,
        error_type=row.error_type,
        canonical_id=row.canonical_id,
        created_canonical=row.created_canonical,
        member_ids=tuple(row.member_ids),
        written_by=row.written_by,
        created_at=aware(row.created_at),
        undone_at=aware(row.undone_at) if row.undone_at else None,
    )


def unchanged(row: Mapping[str, Any] | None, expected: datetime) -> bool:
    """The lesson (its column values) is still active, unmerged and as the plan saw it
    (compare-and-set)."""
    return (
        row is not None
        and row["status"] in ACTIVE
        and row["merged_into"] is None
        and aware(row["updated_at"]) == aware(expected)
    )


def _changed_since(session: Session, merge: MergeRow, canonical: LessonRow | None) -> str:
    """Why the canonical of `merge` is not as the merge left it: a later merge that still
    stands and took it in (folded more into it, or merged it into another; undo that
    first), or an edit or a new sighting (that no undo can take back)."""
    if canonical is None:
        return f"canonical {merge.canonical_id} of merge {merge.id} is gone"
    targets = [merge.canonical_id, *([canonical.merged_into] if canonical.merged_into else [])]
    standing = session.exec(
        select(MergeRow)
        .where(col(MergeRow.canonical_id).in_(targets))
        .where(col(MergeRow.undone_at).is_(None))
        .where(MergeRow.created_at > merge.created_at)
        .order_by(col(MergeRow.created_at).desc())
    ).all()
    later = next(
        (m for m in standing if merge.canonical_id in (m.canonical_id, *m.member_ids)), None
    )
    if later is not None:
        return f"merge {later.id} built on merge {merge.id} later: undo {later.id} first"
    return (
        f"canonical {merge.canonical_id} was edited or seen again after merge {merge.id}: "
        "undoing the merge would drop that change; edit or deprecate the canonical instead"
    )


def undo_merge(
    db: Database,
    index: LessonIndex,
    embedder: Embedder,
    merge_id: str,
    *,
    after_commit: AfterCommitHook | None = None,
) -> MergeRecord:
    """Restore every lesson of a merge exactly as it was before it; the index follows.

    A canonical the merge created is deleted. Raises `MergeConflictError` if the merge was
    undone already or a later change touched its lessons (undo that later merge first).
    """

    def write(session: Session) -> Written[MergeRecord]:
        merge = session.get(MergeRow, merge_id, with_for_update=True)
        if merge is None:
            raise MergeNotFoundError(f"no merge {merge_id!r}")
        if merge.undone_at is not None:
            raise MergeConflictError(f"merge {merge_id} was already undone")
        canonical = session.get(LessonRow, merge.canonical_id, with_for_update=True)
        after = datetime.fromisoformat(merge.after_canonical["updated_at"])
        if canonical is None or aware(canonical.updated_at) != after:
            raise MergeConflictError(_changed_since(session, merge, canonical))
        since = {
            name: (merge.after_canonical[name], getattr(canonical, name))
            for name in USE_COUNTERS
            if name in merge.after_canonical  # merges recorded before this check lack them
        }
        if any(then != now for then, now in since.values()):
            moved = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in since.items() if a != b)
            raise MergeConflictError(
                f"canonical {canonical.id} was used by runs after merge {merge_id} ({moved}): "
                "undoing it would drop that record; edit or deprecate the canonical instead"
            )
        changes = IndexChanges()
        for data in merge.before:
            row = session.get(LessonRow, data["id"], with_for_update=True)
            if row is None:
                raise MergeConflictError(f"lesson {data['id']} of merge {merge_id} is gone")
            if data["id"] != merge.canonical_id and row.merged_into != merge.canonical_id:
                raise MergeConflictError(f"lesson {row.id} was moved after merge {merge_id}")
            if data["id"] != merge.canonical_id and _counted_since(row, data):
                # A run that was given it before the merge finished after it.
                raise MergeConflictError(
                    f"lesson {row.id} of merge {merge_id} was counted by a run after the "
                    "merge: undoing it would drop that record"
                )
            restore(row, data)
            if row.id == merge.canonical_id:
                row.index_state = INDEX_PENDING  # its text changes back: re-embedded
                changes.upsert.append(row)
            # A member's index entry stays as it was: the index holds no status.
            session.add(row)
        if merge.created_canonical:
            changes.delete.append(canonical.id)
            session.delete(canonical)
            vec = session.get(RootCauseVectorRow, canonical.id)
            if vec is not None:
                session.delete(vec)
        merge.undone_at = utcnow()
        session.add(merge)
        session.flush()
        return Written(to_record(merge), changes)

    (record,) = write_through_each(
        db, index, [(None, write)], embedder=embedder, after_commit=after_commit
    )
    return record


def list_merges(db: Database, *, limit: int = 100) -> list[MergeRecord]:
    """The newest merges first."""
    with db.read() as session:
        rows = session.exec(
            select(MergeRow).order_by(col(MergeRow.created_at).desc()).limit(limit)
        ).all()
        return [to_record(r) for r in rows]


def get_merge(db: Database, merge_id: str) -> MergeRecord:
    """One merge record; `MergeNotFoundError` if there is none."""
    with db.read() as session:
        return to_record(_merge_row(session, merge_id))


def merge_before(db: Database, merge_id: str) -> list[Lesson]:
    """The lessons as the merge found them (its before-snapshots), in the order it took them:
    an existing canonical first, then the members."""
    with db.read() as session:
        before = _merge_row(session, merge_id).before
    # A snapshot holds every column in JSON form (see `snapshot`), the lesson's fields among them.
    return [Lesson.model_validate({k: d[k] for k in Lesson.model_fields if k in d}) for d in before]


def merges_of(db: Database, lesson_id: str) -> list[MergeRecord]:
    """Merges whose canonical is this lesson or that folded it in (as the lesson is now
    linked: merged_into), newest first."""
    with db.read() as session:
        lesson = session.get(LessonRow, lesson_id)
        if lesson is None:
            raise LessonNotFoundError(f"no lesson {lesson_id!r}")
        canonicals = {lesson_id, *([lesson.merged_into] if lesson.merged_into else [])}
        rows = session.exec(
            select(MergeRow)
            .where(col(MergeRow.canonical_id).in_(list(canonicals)))
            .order_by(col(MergeRow.created_at).desc())
        ).all()
        return [
            to_record(r) for r in rows if r.canonical_id == lesson_id or lesson_id in r.member_ids
        ]


def _merge_row(session: Session, merge_id: str) -> MergeRow:
    row = session.get(MergeRow, merge_id)
    if row is None:
        raise MergeNotFoundError(f"no merge {merge_id!r}")
    return row
