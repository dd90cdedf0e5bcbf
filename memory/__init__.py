"""lessonloop's memory: typed lessons in SQL (source of truth) and a derived vector index.

Entry points: `Memory.open(...)` / `Memory.in_memory()` (the only writer of lessons, runs,
uses, merges, leases and review flags), the `Embedder` implementations (`MiniLMEmbedder`,
`HashEmbedder` for tests), `render_lessons` for prompts, `redact`; `memory.faults` damages a
store the way crashes do, for tests.
chromadb and sentence-transformers are imported only when a store or model is opened.
"""

from memory.embeddings import Embedder, HashEmbedder, MiniLMEmbedder
from memory.errors import (
    EmbedderUnavailableError,
    EmbeddingMismatchError,
    IndexBehindError,
    LessonMemoryError,
    LessonNotFoundError,
    MemoryBackendError,
    MemoryConfigError,
    MemoryUsageError,
)
from memory.lease import Lease, LeaseLostError
from memory.lift import LessonLift, ReviewFlag
from memory.merges import MergeConflictError, MergeNotFoundError, MergePlan, MergeRecord
from memory.redact import redact
from memory.render import estimate_tokens, render_lessons
from memory.store import Memory
from memory.types import (
    AddResult,
    DriftReport,
    Evidence,
    Lesson,
    LessonDraft,
    LessonFilter,
    LessonQuery,
    LessonStatus,
    LessonText,
    LessonUse,
    MergedCounts,
    NullRecall,
    Page,
    Recall,
    RecallStage,
    Run,
    ScoredLesson,
)
from memory.vectors import ALL_TYPES, Bucket, BucketVectors
from memory.wiring import missing_store

__all__ = [
    "ALL_TYPES",
    "AddResult",
    "Bucket",
    "BucketVectors",
    "DriftReport",
    "Embedder",
    "EmbedderUnavailableError",
    "EmbeddingMismatchError",
    "Evidence",
    "HashEmbedder",
    "Lease",
    "LeaseLostError",
    "Lesson",
    "LessonDraft",
    "LessonFilter",
    "LessonLift",
    "LessonMemoryError",
    "LessonNotFoundError",
    "LessonQuery",
    "LessonStatus",
    "LessonText",
    "LessonUse",
    "Memory",
    "IndexBehindError",
    "MemoryBackendError",
    "MemoryConfigError",
    "MemoryUsageError",
    "MergeConflictError",
    "MergedCounts",
    "MergeNotFoundError",
    "MergePlan",
    "MergeRecord",
    "missing_store",
    "MiniLMEmbedder",
    "NullRecall",
    "Page",
    "Recall",
    "RecallStage",
    "ReviewFlag",
    "Run",
    "ScoredLesson",
    "estimate_tokens",
    "redact",
    "render_lessons",
]
