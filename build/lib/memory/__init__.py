"""lessonloop's memory: typed lessons in SQL (source of truth) and a derived vector index.

Entry points: `Memory.open(...)` / `Memory.in_memory()`, the `Embedder` implementations
(`MiniLMEmbedder`, `HashEmbedder` for tests), `render_lessons` for prompts, `redact`.
chromadb and sentence-transformers are imported only when a store or model is opened.
"""

from memory.embeddings import Embedder, HashEmbedder, MiniLMEmbedder
from memory.errors import (
    EmbedderUnavailableError,
    EmbeddingMismatchError,
    LessonMemoryError,
    LessonNotFoundError,
    MemoryBackendError,
    MemoryConfigError,
    MemoryUsageError,
)
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
    LessonUse,
    NullRecall,
    Page,
    Recall,
    RecallStage,
    Run,
    ScoredLesson,
)

__all__ = [
    "AddResult",
    "DriftReport",
    "EmbedderUnavailableError",
    "Embedder",
    "EmbeddingMismatchError",
    "Evidence",
    "HashEmbedder",
    "Lesson",
    "LessonDraft",
    "LessonFilter",
    "LessonMemoryError",
    "LessonNotFoundError",
    "LessonQuery",
    "LessonStatus",
    "LessonUse",
    "Memory",
    "MemoryBackendError",
    "MemoryConfigError",
    "MemoryUsageError",
    "MiniLMEmbedder",
    "NullRecall",
    "Page",
    "Recall",
    "RecallStage",
    "Run",
    "ScoredLesson",
    "estimate_tokens",
    "redact",
    "render_lessons",
]
