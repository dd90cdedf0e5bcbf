"""What a pass verified, for the lesson: the change reduced, and the failure's own fix.

A refinement (or a round-1 sample standing for the nearest failing draw) passed where the
candidate it repaired failed. Two things are read off the pair, each checked by the task's
check in the sandbox, as the pass was:

- the reduced change (`agent.reduce`): the passing files with each part of the change the
  pass did not need taken back; still passing;
- the failure's fix (`agent.transplant`): the failing files with only the expression of
  the line that raised written as the (reduced) pass writes it, when that alone gets the
  program past that line. Narrower than the reduced change when the pass also fixed other
  things; the lesson, which is about that failure, shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.candidate import Candidate
from agent.checks import execute
from agent.errors import SandboxError
from agent.feedback import Feedback
from agent.reduce import reduce_change
from agent.sandbox import Sandbox
from agent.task import Task
from agent.transplant import failure_fix


@dataclass(frozen=True)
class Verified:
    """What a pass verified, as the `RunResult` fields of the same names, and what to
    report (`detail`, "" when nothing was found)."""

    # The digest of the failing candidate the change is relative to; None: nothing verified.
    verified_base: str | None = None
    verified_files: dict[str, str] | None = None  # the pass, reduced; None: nothing taken back
    taken_back: tuple[str, ...] = ()
    failure_fix: dict[str, str] | None = None
    detail: str = ""

    def result_fields(self) -> dict[str, Any]:
        """The `RunResult` fields, by name."""
        return {name: getattr(self, name) for name in RESULT_FIELDS}


RESULT_FIELDS = ("verified_base", "verified_files", "taken_back", "failure_fix")


def verify_pass(task: Task, sandbox: Sandbox, before: Candidate, failure: Feedback,
                after: Candidate, *, budget: int) -> Verified:  # fmt: skip
    """The reduced change from `before` (which failed with `failure`) to `after` (which
    passed), at most `budget` checks, and the failure's fix, at most half as many more. A
    sandbox that breaks meanwhile leaves nothing verified, and says so in `detail`."""
    checks = 0

    def judge(files: Mapping[str, str]) -> Feedback:
        nonlocal checks
        checks += 1
        return execute(task, files, sandbox=sandbox)

    try:
        reduction = reduce_change(
            before.files, after.files, lambda files: judge(files).passed, budget=budget
        )
        fix = failure_fix(before.files, reduction.files, failure, judge, budget=max(1, budget // 2))
    except (SandboxError, OSError) as exc:
        # The pass was checked; a sandbox that broke after it costs the lesson its narrowing,
        # never the run its pass.
        return Verified(detail=f"not verified: {type(exc).__name__}: {exc}"[:300])
    if not reduction.taken_back and fix is None:
        return Verified()
    details = []
    if reduction.taken_back:
        details.append(f"took back {'; '.join(reduction.taken_back)} ({reduction.checks} checks)")
    if fix is not None:
        spent = checks - reduction.checks
        details.append(f"the failure's own fix: {failure.location} ({spent} checks)")
    return Verified(
        verified_base=before.digest(),
        verified_files=reduction.files if reduction.taken_back else None,
        taken_back=reduction.taken_back,
        failure_fix=fix,
        detail="; ".join(details),
    )
