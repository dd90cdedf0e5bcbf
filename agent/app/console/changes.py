"""The console's change log: who changed which lesson from the console, when, and how.

An append-only JSONL file (one `Change` a line) next to the console's settings home. The
store records the new state (`updated_at`, status, merge records); this file records that
a person did it from the console and what the fields were before.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pydantic import ValidationError

from agent.app.console.models import Change
from memory.types import utcnow


class ChangeLog:
    """Append and read the console's change log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def record(self, lesson_id: str, action: str, detail: str, client: str) -> Change:
        """Append one change (the file and its directory are created on first use)."""
        change = Change(
            at=utcnow(), lesson_id=lesson_id, action=action, detail=detail, client=client
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(change.model_dump_json() + "\n")
        return change

    def for_lesson(self, lesson_id: str) -> tuple[Change, ...]:
        """The changes of one lesson, oldest first (unreadable lines are skipped)."""
        if not self.path.exists():
            return ()
        found = []
        with self._lock, self.path.open(encoding="utf-8") as lines:
            for line in lines:
                if lesson_id not in line:
                    continue
                try:
                    change = Change.model_validate(json.loads(line))
                except (ValueError, ValidationError):
                    continue  # a torn last line after a crash
                if change.lesson_id == lesson_id:
                    found.append(change)
        return tuple(found)
