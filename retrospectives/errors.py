"""Errors raised by the retrospectives package. Branches split by who must act.

```
RetrospectiveError (a LessonloopError)   base: catch this to catch everything from here
├── ConsolidationBusyError               another consolidator holds the lease: retry later
└── UnfinishedRunError                   learn() got a run whose outcome is not stored: the
                                         caller must finish it first (our caller's bug)
```

A model that answers badly is never an error here: the retrospective falls back to the
deterministic lesson and says so in the lesson's evidence. Merge records and their undo
live in the memory package and raise its errors (`memory.merges.MergeNotFoundError`,
`memory.merges.MergeConflictError`, both `LessonMemoryError`s).
"""

from __future__ import annotations

from agent.errors import LessonloopError


class RetrospectiveError(LessonloopError):
    """Base class of every error raised by the retrospectives package."""


class ConsolidationBusyError(RetrospectiveError):
    """Another consolidation pass holds the lease on this store."""


class UnfinishedRunError(RetrospectiveError):
    """`learn` was given a run whose outcome the memory has not stored yet."""
