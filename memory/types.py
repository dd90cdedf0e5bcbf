"""Domain types of the memory: lessons, drafts, typed recall queries, and the Recall protocol.

These are frozen value objects. The SQL rows live in memory/schema.py; the agent only ever
sees these types, so the storage can change without touching the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

LessonStatus = Literal["candidate", "validated", "deprecated", "merged"]
RecallStage = Literal["seed", "reflection"]
UseOutcome = Literal["pending", "passed", "failed"]


class Evidence(BaseModel):
    """Where a lesson came from: a run id and a (redacted) log excerpt."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    excerpt: str = ""


class LessonDraft(BaseModel):
    """A lesson before it is stored: what a retrospective (or a person) proposes."""

    model_config = ConfigDict(frozen=True)

    scope: str = "default"
    error_type: str
    symptom: str
    root_cause: str
    fix: str
    applies_when: str = ""
    evidence: tuple[Evidence, ...] = ()
    status: LessonStatus = "candidate"
    # Lessons that were injected into the run that produced this draft (recall-loop guard).
    injected_lesson_ids: tuple[str, ...] = ()


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


class ScoredLesson(BaseModel):
    model_config = ConfigDict(frozen=True)

    lesson: Lesson
    similarity: float
    score: float


class Recall(Protocol):
    """The memory side the loop talks to: recall before generating/reflecting, report use."""

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]: ...

    def report_use(
        self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]
    ) -> None: ...


class NullRecall:
    """Recall that knows nothing: the loop without memory (`--no-memory`)."""

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]:
        return ()

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        return None
