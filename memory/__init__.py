"""lessonloop's memory: typed lessons in SQL (source of truth) and a derived vector index."""

from memory.types import (
    Evidence,
    Lesson,
    LessonDraft,
    LessonQuery,
    LessonStatus,
    NullRecall,
    Recall,
    RecallStage,
    ScoredLesson,
)

__all__ = [
    "Evidence",
    "Lesson",
    "LessonDraft",
    "LessonQuery",
    "LessonStatus",
    "NullRecall",
    "Recall",
    "RecallStage",
    "ScoredLesson",
]
