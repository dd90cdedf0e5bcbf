"""What the console's pages show: frozen views assembled by `agent.app.console.data`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.app.console.trajectory import RoundView, VerifiedView
from agent.app.report import LearningRun, RecallRun
from memory.curate import LessonStats
from memory.lift import LessonLift, ReviewFlag
from memory.merges import MergeRecord
from memory.quality import QualityReport
from memory.types import Lesson, LessonUse, Run

Decision = Literal["keep", "approve", "deprecate", "restore"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class LessonLine(_Frozen):
    """One row of the lessons table: the lesson, its lift and when a run last got it."""

    lesson: Lesson
    lift: LessonLift | None
    flagged: bool


class Facets(_Frozen):
    """The values the filters offer."""

    scopes: tuple[str, ...]
    error_types: tuple[str, ...]


class SearchHit(_Frozen):
    """A recalled lesson and why it ranked where it did (memory.recall's formula, split up)."""

    lesson: Lesson
    similarity: float  # cosine to the query
    score: float  # what recall ranked by
    relevance: float  # fused rank by meaning and by words (1.0: first in both)
    bm25: float | None  # None: the lesson shares no word with the query
    use_term: float
    recency_term: float
    validated_bonus: float
    flagged_penalty: float


class SearchResult(_Frozen):
    """What a search asked recall and what came back."""

    text: str
    scope: str
    error_type: str | None
    min_similarity: float
    hits: tuple[SearchHit, ...]


class Change(_Frozen):
    """A change made from the console (the console's own change log)."""

    at: datetime
    lesson_id: str
    action: str
    detail: str
    client: str


class MergeLink(_Frozen):
    """A merge that touched a lesson, and how."""

    record: MergeRecord
    role: Literal["canonical", "member"]


class LessonDetail(_Frozen):
    """Everything the lesson page shows."""

    lesson: Lesson
    uses: tuple[LessonUse, ...]
    lift: LessonLift | None
    flag: ReviewFlag | None
    merges: tuple[MergeLink, ...]
    changes: tuple[Change, ...]


class Snapshot(_Frozen):
    """A lesson's text as a merge found it."""

    id: str
    status: str
    symptom: str
    root_cause: str
    fix: str
    applies_when: str


class MergeDetail(_Frozen):
    """A merge with the texts before it and the canonical lesson as it is now."""

    record: MergeRecord
    before: tuple[Snapshot, ...]
    canonical: Lesson | None  # None: the merge created it and was undone


class FlaggedLesson(_Frozen):
    """A review flag with its lesson and lift."""

    flag: ReviewFlag
    lesson: Lesson | None
    lift: LessonLift | None


class ReviewQueue(_Frozen):
    """What `lessonloop review` lists, plus the lessons waiting for a first decision."""

    flagged: tuple[FlaggedLesson, ...]
    misleading: tuple[Lesson, ...]  # active lessons that misled more often than they helped
    candidates: tuple[Lesson, ...]  # most recalled candidates first
    candidates_total: int


class RunDetail(_Frozen):
    """A run as the store has it, and its trajectory if the run directory is on this machine."""

    run: Run
    run_dir: Path
    trajectory_error: str | None  # why there is no trajectory
    stop_reason: str | None
    rounds: tuple[RoundView, ...]
    verified: VerifiedView | None = None  # what the pass verified, for the lesson


class Hygiene(_Frozen):
    """The `stats --quality` figures as last computed (in the background: O(n^2) per scope)."""

    report: QualityReport | None
    computed_at: datetime | None
    seconds: float | None
    running: bool
    error: str | None


class Health(_Frozen):
    """Lesson counts, the hygiene figures and the newest benchmark results."""

    stats: LessonStats
    hygiene: Hygiene
    learning: LearningRun | None
    learning_png: Path | None
    recall: RecallRun | None
