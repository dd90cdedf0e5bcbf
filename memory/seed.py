"""Seed a memory with known fixes: plain lesson records through the normal write path.

A user who wants a new assistant to start with what another one (or a person) learned has
records, not an export: one JSON object per line (JSONL, UTF-8, blank lines ignored),

    {"error_type": "ValueError",
     "symptom": "float() fails on '$1,299.99'",
     "root_cause": "money columns carry a currency sign and thousands separators",
     "fix": "strip the sign and the separators before float()",
     "applies_when": "CSV exports written for people",       optional, default ""
     "scope": "billing",                                       optional, default: the import's
     "status": "candidate" | "validated"}                      optional, default "candidate"

Unlike a restore (`memory.export`), each record is a new write by `Memory.add_many`: secrets are
redacted, a record that matches a stored lesson folds into it (`seen` + 1) instead of making a
duplicate, ids, counters and timestamps are the store's own. "validated" is for fixes a
person vouches for: recall ranks them up. Unknown keys, missing fields, empty texts and a
file that is an export (its header line) are refused with the line number; the other lines
are still written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.errors import brief
from memory.store import Memory
from memory.types import ERROR_TYPE_MAX_CHARS, SCOPE_MAX_CHARS, AddAction, LessonDraft

SeedProgress = Callable[[int], None]


class SeedRecord(BaseModel):
    """One line of a seed file."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    error_type: str = Field(min_length=1, max_length=ERROR_TYPE_MAX_CHARS)
    symptom: str = Field(min_length=1)
    root_cause: str = Field(min_length=1)
    fix: str = Field(min_length=1)
    applies_when: str = ""
    scope: str | None = Field(default=None, min_length=1, max_length=SCOPE_MAX_CHARS)
    status: Literal["candidate", "validated"] = "candidate"


class SeedLine(BaseModel):
    """What became of one line: the action and lesson id, or why it was refused."""

    model_config = ConfigDict(frozen=True)

    line: int
    action: AddAction | Literal["error"]
    lesson_id: str | None = None
    message: str = ""


class SeedReport(BaseModel):
    """Every non-blank line of the file, in order."""

    model_config = ConfigDict(frozen=True)

    lines: tuple[SeedLine, ...]

    def count(self, action: str) -> int:
        return sum(1 for line in self.lines if line.action == action)

    @property
    def ok(self) -> bool:
        """No line was refused as malformed (a folded duplicate is fine)."""
        return self.count("error") == 0


def seed_lessons(
    memory: Memory,
    lines: Iterable[str],
    *,
    scope: str = "default",
    progress: SeedProgress | None = None,
    batch: int = 500,
) -> SeedReport:
    """Add every valid record of `lines` through `Memory.add_many`, `batch` records per
    call (one transaction and one index write each); see the module docstring."""
    done: list[SeedLine] = []
    pending: list[tuple[int, LessonDraft]] = []
    seen = 0

    def flush() -> None:
        results = memory.add_many([draft for _, draft in pending])
        for (number, _), result in zip(pending, results, strict=True):
            done.append(
                SeedLine(
                    line=number,
                    action=result.action,
                    lesson_id=result.lesson.id if result.lesson else None,
                    message=result.reason,
                )
            )
        pending.clear()
        if progress is not None:
            progress(seen)

    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        seen += 1
        parsed = _seed_line(number, text, scope)
        if isinstance(parsed, SeedLine):
            done.append(parsed)
        else:
            pending.append((number, parsed))
        if len(pending) >= batch:
            flush()
    if pending or progress is not None:
        flush()
    return SeedReport(lines=tuple(sorted(done, key=lambda line: line.line)))


def _seed_line(number: int, text: str, scope: str) -> LessonDraft | SeedLine:
    """The draft a line asks for, or the error that refuses it."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return SeedLine(line=number, action="error", message=f"not JSON: {exc.msg}")
    if isinstance(data, dict) and "format" in data:
        return SeedLine(
            line=number,
            action="error",
            message="a header line, not a lesson record (an export must start with its header)",
        )
    try:
        record = SeedRecord.model_validate(data)
    except ValidationError as exc:
        return SeedLine(line=number, action="error", message=brief(exc))
    return LessonDraft(
        scope=record.scope or scope,
        error_type=record.error_type,
        symptom=record.symptom,
        root_cause=record.root_cause,
        fix=record.fix,
        applies_when=record.applies_when,
        status=record.status,
    )
