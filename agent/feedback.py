"""What a check says about a candidate: a typed, compressed Feedback."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.marks import INPUT_LABEL

FeedbackKind = Literal[
    "success",
    "syntax_error",
    "runtime_error",
    "resource_error",
    "timeout",
    "check_failed",
    "critic_rejected",
]

# Which stage produced the feedback: cheapest first.
CheckStage = Literal["rule", "execution", "critic"]


class Feedback(BaseModel):
    """A compressed verdict the reflector reads; the full log stays on disk at `log_path`."""

    model_config = ConfigDict(frozen=True)

    kind: FeedbackKind
    stage: CheckStage
    summary: str
    error_type: str | None = None  # e.g. "KeyError", "SyntaxError", "MemoryError"
    location: str | None = None  # e.g. "solution.py:12"
    key_message: str | None = None
    failing_example: str | None = None
    # What the input shows about the failure (agent.evidence.data_evidence): the crash value's
    # column, header or bytes; else, for a failed check, the data's unusual columns.
    input_evidence: str | None = None
    # What the candidate's program printed when its result failed the check: a digest of its
    # own messages (a row skipped "due to invalid cost format" 28 times says where it fails).
    program_said: str | None = None
    # The start of each output file the check's message names, as the program wrote it
    # ("result.json: 'u1: 12.5\\nu2: 3.0\\n'"): a file that is not JSON shows why.
    program_wrote: str | None = None
    issues: tuple[str, ...] = ()
    score: float | None = None  # critic score 1-10 when the critic ran
    # Partial credit 0..1 that the check reported (`LESSONLOOP_SCORE 7/9`); 1 on success.
    credit: float | None = None
    log_path: Path | None = None

    @property
    def passed(self) -> bool:
        return self.kind == "success"

    def signature(self) -> str:
        """Identity of the failure, used to detect a stall (the same failure twice)."""
        return "|".join(
            [self.kind, self.error_type or "", self.location or "", (self.key_message or "")[:200]]
        )

    def compressed(self, *, program: bool = True) -> str:
        """At most a few lines for the reflector: kind, location, key message, example.

        `program=False` leaves out what the program printed: recall's query is about the
        failure and the input, and a program's own lines would bring their data symbols
        (and the digest's separators) into the reflection data gate.
        """
        lines = [f"kind: {self.kind}" + (f" ({self.error_type})" if self.error_type else "")]
        if self.location:
            lines.append(f"where: {self.location}")
        if self.key_message:
            lines.append(f"message: {self.key_message}")
        if self.failing_example:
            lines.append(f"failing example: {self.failing_example}")
        if self.input_evidence:
            lines.append(f"{INPUT_LABEL}{self.input_evidence}")
        if self.program_said and program:
            lines.append(f"the program printed: {self.program_said}")
        if self.program_wrote and program:
            lines.append(f"the program wrote: {self.program_wrote}")
        if self.issues:
            lines.extend(f"issue: {issue}" for issue in self.issues[:5])
        if len(lines) == 1:
            lines.append(self.summary)
        return "\n".join(lines)
