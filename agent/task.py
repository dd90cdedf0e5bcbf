"""A task in the task format: a directory with task.toml, workspace/ and checker files."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent.errors import TaskFormatError
from memory.types import SCOPE_MAX_CHARS


class Task(BaseModel):
    """What to do, which files to write, and how the result is checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    goal: str
    output: tuple[str, ...] = ()
    # The candidate's own run (e.g. "python solution.py"), without the task directory;
    # then `check`, the checker, with it. Without `run`, `check` does both in one process.
    run: str | None = None
    check: str | None = None
    timeout_s: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    tags: tuple[str, ...] = ()
    # Lessons learned here are filed under it: the memory's bounds, checked before the run.
    scope: str = Field(default="default", min_length=1, max_length=SCOPE_MAX_CHARS)
    # Directory holding task.toml and checker files (TASK_DIR for the check command).
    task_dir: Path | None = None

    @field_validator("output")
    @classmethod
    def _relative_outputs(cls, output: tuple[str, ...]) -> tuple[str, ...]:
        # Candidates are mapped onto these names, so they must stay inside the workspace.
        for name in output:
            parts = Path(name).parts
            if not name or Path(name).is_absolute() or ".." in parts:
                raise ValueError(f"output {name!r} must be a relative path inside the workspace")
        return output

    @model_validator(mode="after")
    def _run_needs_a_check(self) -> Task:
        if self.run is not None and self.check is None:
            raise ValueError("run needs a check: the checker that judges what the run wrote")
        return self

    @property
    def workspace(self) -> Path | None:
        if self.task_dir is None:
            return None
        ws = self.task_dir / "workspace"
        return ws if ws.is_dir() else None

    def workspace_files(self, max_bytes: int = 2_000) -> dict[str, str]:
        """Previews of workspace files as the generator sees them.

        Like an engineer's first look with `head` and `file`: invisible characters (a BOM,
        control bytes) are shown escaped, and a file that is not UTF-8 says so.
        """
        previews: dict[str, str] = {}
        if self.workspace is None:
            return previews
        for path in sorted(self.workspace.rglob("*")):
            if path.is_file():
                with path.open("rb") as fh:
                    raw = fh.read(max_bytes + 1)
                previews[str(path.relative_to(self.workspace))] = preview_bytes(
                    raw[:max_bytes], cut=len(raw) > max_bytes
                )
        return previews


def preview_bytes(raw: bytes, *, cut: bool = False) -> str:
    """Readable text of a file's first bytes, with what is unusual about it made visible."""
    try:
        text = raw.decode("utf-8")
        note = ""
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(raw) - 3:  # a multi-byte character cut by the bound
            text, note = raw[: exc.start].decode("utf-8"), ""
        else:
            text = raw.decode("utf-8", errors="replace")
            note = f"[not valid UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}]\n"
    visible = "".join(
        ch if ch.isprintable() or ch in "\n\t" else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )
    return note + visible


_ALLOWED_KEYS = {"goal", "output", "run", "check", "timeout_s", "tags", "scope", "id"}


def load_task(task_dir: Path | str) -> Task:
    """Read a task directory; a malformed one is a TaskFormatError naming the problem."""
    root = Path(task_dir).resolve()
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        raise TaskFormatError(f"{root}: no task.toml (expected the task format, see README)")
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"{toml_path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"{toml_path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    unknown = set(data) - _ALLOWED_KEYS
    if unknown:
        raise TaskFormatError(f"{toml_path}: unknown keys {sorted(unknown)}")
    data.setdefault("id", root.name)
    try:
        task = Task(task_dir=root, **data)
    except ValidationError as exc:
        raise TaskFormatError(f"{toml_path}: {exc}") from exc
    # A checker the check command names but the task lacks fails every round the same way.
    for name in _TASK_FILE.findall(task.check or ""):
        if not any(c in name for c in "$*?[") and not (root / name).exists():
            raise TaskFormatError(f"{toml_path}: the check runs $TASK_DIR/{name}, not in {root}")
    return task


# A file of the task directory a check command names: $TASK_DIR/check.py, ${TASK_DIR}/x.py.
_TASK_FILE = re.compile(r"\$\{?TASK_DIR\}?/([^\s\"';|&<>()]+)")
