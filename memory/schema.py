"""SQL schema (sqlmodel): the source of truth. Rows never leave the package; see `to_*`.

Tables, all created when a store connects (`memory.migrate`):
- `lessons`, `runs`, `lesson_uses`;
- `memory_meta`: schema version, which embedding model built the store;
- `lesson_merges`: consolidation merges with the before-snapshots that undo them;
- `consolidation_vectors`: per lesson the root-cause embedding consolidation clusters on,
  and whether a pass has processed it (what makes passes incremental and resumable);
- `leases`: named leases with an expiry (one consolidation pass at a time);
- `lesson_reviews`: lessons flagged for a person to review;
- `lesson_counts`: change counters per (scope, error type), kept by triggers (`memory.counts`).
JSON columns hold lists (evidence, id lists) so the schema stays portable between SQLite and
PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from memory.types import (
    ERROR_TYPE_MAX_CHARS,
    SCOPE_MAX_CHARS,
    Evidence,
    Lesson,
    LessonUse,
    Run,
    utcnow,
)

IndexState = str  # "pending" (SQL written, index not yet) | "indexed"
INDEX_PENDING = "pending"
INDEX_DONE = "indexed"


def aware(value: datetime) -> datetime:
    """`value` as an aware datetime (SQLite drops the tz info; everything is stored as UTC)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class LessonRow(SQLModel, table=True):
    """A lesson as stored. `dedup_vector` is the root-cause+fix embedding used on write."""

    __tablename__ = "lessons"
    __table_args__ = (
        Index("ix_lessons_scope_type_status", "scope", "error_type", "status"),
        Index("ix_lessons_index_state", "index_state"),
        # Newest first is how lessons are listed (CLI, console): a page of a 100k store
        # walks the index instead of sorting every row.
        Index("ix_lessons_created", "created_at", "id"),
        Index("ix_lessons_updated", "updated_at", "id"),
        # What changed in a scope (or one error type of it) since a cache last looked
        # (memory.counts says that something did), and the lessons merged into one (recall's
        # error-type gate): without them both read the whole table.
        Index("ix_lessons_scope_updated", "scope", "updated_at"),
        Index("ix_lessons_scope_type_updated", "scope", "error_type", "updated_at"),
        Index("ix_lessons_merged_into", "merged_into"),
        # The canonicals that lessons of some error types were merged into (recall's typed
        # search, `memory.queries.canonicals_of`): read from the index alone. Without it
        # SQLite read a table row per lesson of the scope and type (160 ms at 100k).
        Index("ix_lessons_scope_type_merged", "scope", "error_type", "merged_into"),
    )

    id: str = Field(primary_key=True, max_length=64)
    scope: str = Field(max_length=SCOPE_MAX_CHARS)
    error_type: str = Field(max_length=ERROR_TYPE_MAX_CHARS)
    symptom: str
    root_cause: str
    fix: str
    applies_when: str = ""
    evidence: list[dict[str, str]] = Field(default_factory=list, sa_column=Column(JSON))
    status: str = Field(default="candidate", max_length=20)
    seen: int = 1
    recalled: int = 0
    helped: int = 0
    misled: int = 0
    merged_into: str | None = Field(default=None, max_length=64)
    merged_from: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    embedding_model: str = Field(default="", max_length=200)
    # float32 little-endian, L2-normalised embedding of root cause + fix (dedup on write).
    dedup_vector: bytes = Field(default=b"", sa_column=Column(LargeBinary, nullable=False))
    index_state: str = Field(default=INDEX_PENDING, max_length=20)


class RunRow(SQLModel, table=True):
    """A task run: outcome, cost, and which lessons it recalled or wrote."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=64)
    task_id: str = ""
    goal: str = ""
    scope: str = Field(default="default", max_length=200)
    passed: bool | None = None
    rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    recalled_lesson_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    written_lesson_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    # Why the run ended without an outcome (a crashed model, an interrupt); "" otherwise.
    error: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))


class LessonUseRow(SQLModel, table=True):
    """One lesson handed to one run at one stage; the outcome is set when the run finishes."""

    __tablename__ = "lesson_uses"
    __table_args__ = (UniqueConstraint("lesson_id", "run_id", "stage", name="uq_lesson_use"),)

    id: int | None = Field(default=None, primary_key=True)
    lesson_id: str = Field(index=True, max_length=64)
    run_id: str = Field(index=True, max_length=64)
    stage: str = Field(max_length=20)
    outcome: str = Field(default="pending", max_length=20)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class MetaRow(SQLModel, table=True):
    """Store-wide facts: schema version, embedding model id and dimension."""

    __tablename__ = "memory_meta"

    key: str = Field(primary_key=True, max_length=100)
    value: str


class MergeRow(SQLModel, table=True):
    """One merge, with everything needed to undo it."""

    __tablename__ = "lesson_merges"

    id: str = Field(primary_key=True, max_length=64)
    scope: str = Field(max_length=200, index=True)
    error_type: str = Field(max_length=100)
    canonical_id: str = Field(max_length=64, index=True)
    created_canonical: bool
    member_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    before: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    after_canonical: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    written_by: str = Field(default="", max_length=40)
    created_at: datetime = Field(
        default_factory=utcnow, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    undone_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class RootCauseVectorRow(SQLModel, table=True):
    """A lesson's root-cause embedding for clustering, and whether a pass processed it."""

    __tablename__ = "consolidation_vectors"

    lesson_id: str = Field(primary_key=True, max_length=64)
    embedding_model: str = Field(max_length=200)
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    processed: bool = Field(default=False, index=True)


class LeaseRow(SQLModel, table=True):
    """Who holds the named lease, until when."""

    __tablename__ = "leases"

    name: str = Field(primary_key=True, max_length=100)
    holder: str = Field(max_length=200)
    expires_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    acquired_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class ReviewRow(SQLModel, table=True):
    """A lesson flagged for a person to review (e.g. recalled in failing runs)."""

    __tablename__ = "lesson_reviews"

    lesson_id: str = Field(primary_key=True, max_length=64)
    reason: str
    flagged_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class LessonCountRow(SQLModel, table=True):
    """Change counters per (scope, error type), kept by triggers (see `memory.counts`)."""

    __tablename__ = "lesson_counts"

    scope: str = Field(primary_key=True, max_length=200)
    error_type: str = Field(primary_key=True, max_length=100)
    generation: int = 0
    recallable: int = 0
    unmerged: int = 0


# Every table of the store, in creation order.
TABLES: list[Any] = [
    LessonRow.__table__,  # type: ignore[attr-defined]
    RunRow.__table__,  # type: ignore[attr-defined]
    LessonUseRow.__table__,  # type: ignore[attr-defined]
    MetaRow.__table__,  # type: ignore[attr-defined]
    MergeRow.__table__,  # type: ignore[attr-defined]
    RootCauseVectorRow.__table__,  # type: ignore[attr-defined]
    LeaseRow.__table__,  # type: ignore[attr-defined]
    ReviewRow.__table__,  # type: ignore[attr-defined]
    LessonCountRow.__table__,  # type: ignore[attr-defined]
]


def to_lesson(row: LessonRow) -> Lesson:
    """Frozen domain model from a row (validates status and evidence on the way out)."""
    return lesson_from({name: getattr(row, name) for name in LESSON_COLUMNS})


# The columns a `Lesson` is built from (not the dedup vector nor the index state).
LESSON_COLUMNS = (
    *("id", "scope", "error_type", "symptom", "root_cause", "fix", "applies_when", "evidence"),
    *("status", "seen", "recalled", "helped", "misled", "merged_into", "merged_from"),
    *("created_at", "updated_at", "embedding_model"),
)


def lesson_from(values: Mapping[Any, Any]) -> Lesson:
    """`to_lesson` for a row's column values (a bulk insert's, which builds no ORM row)."""
    return Lesson.model_validate(
        {
            **{name: values[name] for name in LESSON_COLUMNS},
            "evidence": tuple(Evidence.model_validate(e) for e in values["evidence"] or ()),
            "merged_from": tuple(values["merged_from"] or ()),
            "created_at": aware(values["created_at"]),
            "updated_at": aware(values["updated_at"]),
        }
    )


def to_run(row: RunRow) -> Run:
    """Frozen domain model from a run row."""
    return Run(
        id=row.id,
        task_id=row.task_id,
        goal=row.goal,
        scope=row.scope,
        passed=row.passed,
        rounds=row.rounds,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        recalled_lesson_ids=tuple(row.recalled_lesson_ids or ()),
        written_lesson_ids=tuple(row.written_lesson_ids or ()),
        created_at=aware(row.created_at),
        error=row.error or "",
    )


def to_use(row: LessonUseRow) -> LessonUse:
    """Frozen domain model from a lesson-use row."""
    return LessonUse.model_validate(
        {
            "lesson_id": row.lesson_id,
            "run_id": row.run_id,
            "stage": row.stage,
            "outcome": row.outcome,
            "created_at": aware(row.created_at),
        }
    )


def evidence_json(evidence: tuple[Evidence, ...] | list[Evidence]) -> list[dict[str, str]]:
    """Evidence as JSON-able dicts for the `evidence` column."""
    return [e.model_dump() for e in evidence]
