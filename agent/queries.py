"""What the loop asks recall: the task-start query and the reflection stage's error types."""

from __future__ import annotations

from agent.feedback import Feedback
from agent.profile import input_profile, input_symbols
from agent.task import Task


def seed_query(task: Task) -> tuple[str, tuple[str, ...]]:
    """The task-start query: (goal + the head of each input file, each head on its own).

    Lessons are indexed by symptom and root cause, and the data's surface ("$1,299.99", a BOM)
    is what a task start shares with them; in the joined text the goal's words dominate the
    embedding, so recall also scores each head alone (`LessonQuery.surface`, max fusion).
    """
    heads = [
        f"--- {name} ---\n" + "\n".join(preview.splitlines()[:3])
        for name, preview in task.workspace_files(max_bytes=300).items()
    ]
    profile = input_profile(task.workspace)
    return "\n".join([task.goal, *heads, *profile]), (*heads, *profile)


def error_types(feedback: Feedback) -> tuple[str, ...]:
    """The reflection stage's gate: the exception's type and the feedback kind."""
    return tuple(t for t in (feedback.error_type, feedback.kind) if t)


def data_views(task: Task, surface: tuple[str, ...]) -> tuple[str, ...]:
    """What the data gate judges a task on at every recall (`LessonQuery.data`): the task
    start's views and a line quoting each data symbol anywhere in its input."""
    symbols = input_symbols(task.workspace)
    return (*surface, symbols) if symbols else surface
