"""Domain types of the memory: lessons, drafts, typed recall queries, and the Recall protocol.

These are frozen value objects. The SQL rows live in memory/schema.py; the agent only ever
sees these types, so the storage can change without touching the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Generic, Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

LessonStatus = Literal["candidate", "validated", "deprecated", "merged"]
STATUSES: tuple[LessonStatus, ...] = get_args(LessonStatus)
# The active statuses: what recall hands out, and what consolidation, the stats and the
# review count; a deprecated or merged lesson is kept for the record only.
ACTIVE: tuple[LessonStatus, ...] = ("candidate", "validated")
# The shared scope: its lessons apply in every scope that asks for them (`include_global`).
GLOBAL_SCOPE = "global"
RecallStage = Literal["seed", "reflection"]
# How the run a lesson was handed to ended; "outranked": a candidate of that run drawn
# without the lesson did better (the lesson misled there, whatever the end).
UseOutcome = Literal["pending", "passed", "failed", "outranked", "aborted"]
AddAction = Literal["created", "merged_duplicate", "rejected_recall_loop"]
LessonSort = Literal["created_at", "updated_at", "seen", "recalled", "helped", "misled"]

T = TypeVar("T")
# Bounds of a lesson's scope and error type: the SQL columns' sizes (PostgreSQL enforces them)
# and the export format's; every write checks them, so a stored lesson always exports.
SCOPE_MAX_CHARS = 200
ERROR_TYPE_MAX_CHARS = 100


def utcnow() -> datetime:
    """Timezone-aware now; every timestamp in the store is UTC."""
    return datetime.now(UTC)


class Evidence(BaseModel):
    """Where a lesson came from: a run id and a (redacted) log excerpt."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    excerpt: str = ""


class LessonText(BaseModel):
    """The words of a lesson: what was seen, why, what fixes it, and when that applies.

    The shared base of what carries a lesson's text before it is stored (drafts, merge
    plans, canonical texts; the counts a merge carries over are `MergedCounts`). `Lesson` (a
    stored lesson: id first), the export's `LessonRecord` (a file format with its own
    documented key order and bounds) and the SQL row declare the same fields themselves;
    tests/memory/test_memory_units.py keeps the declarations from drifting apart.
    """

    model_config = ConfigDict(frozen=True)

    symptom: str
    root_cause: str
    fix: str
    applies_when: str = ""


class MergedCounts(BaseModel):
    """What a canonical lesson carries over from the lessons merged into it.

    The shared base of the consolidation's canonical (`retrospectives.canonical.Canonical`,
    what it decided) and the memory's `MergePlan` (what the merge writes).
    """

    model_config = ConfigDict(frozen=True)

    status: LessonStatus
    seen: int
    recalled: int
    helped: int
    misled: int
    evidence: tuple[Evidence, ...]
    merged_from: tuple[str, ...]


class LessonDraft(LessonText):
    """A lesson before it is stored: what a retrospective (or a person) proposes."""

    scope: str = Field(default="default", min_length=1, max_length=SCOPE_MAX_CHARS)
    error_type: str = Field(min_length=1, max_length=ERROR_TYPE_MAX_CHARS)
    evidence: tuple[Evidence, ...] = ()
    status: LessonStatus = "candidate"
    # Lessons that were injected into the run that produced this draft (recall-loop guard).
    injected_lesson_ids: tuple[str, ...] = ()

    @field_validator("scope", "error_type", "symptom", "root_cause", "fix")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        # What `Memory.update` refuses, `add` refuses too (`applies_when` may be empty).
        if not value.strip():
            raise ValueError("cannot be blank")
        return value


class Lesson(BaseModel):
    """A stored lesson with its counters and merge provenance."""

    model_config = ConfigDict(frozen=True)

    id: str
    scope: str
    error_type: str
    symptom: str
    root_cause: str
    fix: str
    applies_when: str = ""
    evidence: tuple[Evidence, ...] = ()
    status: LessonStatus = "candidate"
    seen: int = 1
    recalled: int = 0
    helped: int = 0
    misled: int = 0
    merged_into: str | None = None
    merged_from: tuple[str, ...] = ()
    created_at: datetime
    updated_at: datetime
    embedding_model: str = ""


class LessonQuery(BaseModel):
    """What the loop asks the memory for. Typed; never a dict mini-language."""

    model_config = ConfigDict(frozen=True)

    text: str
    scope: str = "default"
    error_types: tuple[str, ...] = ()
    stage: RecallStage = "seed"
    limit: int = Field(default=3, ge=1, le=50)
    token_budget: int = Field(default=300, ge=0)
    # Also search the shared "global" scope in addition to `scope`.
    include_global: bool = False
    # None: use the store's configured cut-off.
    min_similarity: float | None = None
    # The task's data as it looks (e.g. each input file's first lines), each scored on its
    # own besides `text`: a lesson's similarity is its best over all (see memory.recall).
    surface: tuple[str, ...] = ()
    # The task's input data as its program will read it (each file's head, the data's
    # profile), at any stage. Given, the data gate judges on it and strictly: a lesson that
    # quotes a data symbol reaches the query only if this data holds one of them
    # (`memory.datagate`). Never scored for similarity.
    data: tuple[str, ...] = ()
    # Lessons not to return (the loop's: those this run already saw mislead). They are left
    # out before the gates, the ranking and the budget, so the next lessons take their place.
    exclude: tuple[str, ...] = ()


class ScoredLesson(BaseModel):
    """A recalled lesson: cosine `similarity` to the query and the re-ranked `score`."""

    model_config = ConfigDict(frozen=True)

    lesson: Lesson
    similarity: float
    score: float


class AddResult(BaseModel):
    """What `Memory.add` did with a draft, and why."""

    model_config = ConfigDict(frozen=True)

    # The stored lesson: the new one, or the existing one the draft was folded into.
    # None only when the draft was rejected (nothing stored).
    lesson: Lesson | None
    action: AddAction
    reason: str = ""


class LessonFilter(BaseModel):
    """Which lessons to list, in what order, which page. No silent caps: `limit` is validated."""

    model_config = ConfigDict(frozen=True)

    scope: str | None = None
    # With `scope`, the shared "global" scope's lessons too.
    include_global: bool = False
    error_type: str | None = None
    status: tuple[LessonStatus, ...] = ()
    sort: LessonSort = "created_at"
    descending: bool = True
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=50, ge=1, le=1000)


class Page(BaseModel, Generic[T]):
    """One page of results plus the total number that matched the filter."""

    model_config = ConfigDict(frozen=True)

    items: tuple[T, ...]
    total: int
    offset: int
    limit: int


class Run(BaseModel):
    """One task run as the memory records it (for lift and provenance)."""

    model_config = ConfigDict(frozen=True)

    id: str
    task_id: str = ""
    goal: str = ""
    scope: str = "default"
    passed: bool | None = None  # None while the run is in progress
    rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    recalled_lesson_ids: tuple[str, ...] = ()
    written_lesson_ids: tuple[str, ...] = ()
    created_at: datetime
    # Why the run ended without an outcome (`passed` stays None): a crashed model, an
    # interrupt. "" for a run that finished or is still going.
    error: str = ""


class LessonUse(BaseModel):
    """A lesson handed to a run at some stage, and how that run ended."""

    model_config = ConfigDict(frozen=True)

    lesson_id: str
    run_id: str
    stage: RecallStage
    outcome: UseOutcome = "pending"
    created_at: datetime


class DriftReport(BaseModel):
    """Differences between SQL (the truth) and the vector index, and whether they were fixed."""

    model_config = ConfigDict(frozen=True)

    pending: tuple[str, ...] = ()  # SQL rows whose index write never completed
    missing_in_index: tuple[str, ...] = ()  # marked indexed in SQL but absent from the index
    orphans_in_index: tuple[str, ...] = ()  # in the index, not in SQL
    metadata_drift: tuple[str, ...] = ()  # index metadata (error type, model) differs from SQL
    repaired: bool = False

    @property
    def clean(self) -> bool:
        """True when SQL and the index agree."""
        return not (
            self.pending or self.missing_in_index or self.orphans_in_index or self.metadata_drift
        )


class Recall(Protocol):
    """The memory side the loop talks to: recall before generating/reflecting, report use."""

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]: ...

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None: ...


class NullRecall:
    """Recall that knows nothing: the loop without memory (`--no-memory`)."""

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]:
        return ()

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        return None
