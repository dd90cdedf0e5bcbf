"""The last Python exception a process printed, read from its output: type, message and
frames; where each frame's file lives (the candidate's workspace, the task's directory or
elsewhere); and whether a check broke in its own code (`check_defect`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.container import SANDBOX_TASK_DIR
from agent.sandbox import ExecResult
from agent.workspace import SANDBOX_WORKSPACE

_HEADER = re.compile(r"^Traceback \(most recent call last\):\s*$")
_FRAME = re.compile(r'^\s+File "(?P<file>.+?)", line (?P<line>\d+)(?:, in .*)?\s*$')
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
SYNTAX_TYPES = frozenset({"SyntaxError", "IndentationError", "TabError"})


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    code: str | None


@dataclass(frozen=True)
class PyError:
    """The exception that ended a Python process, as its traceback printed it."""

    type: str  # the class name without its module: "JSONDecodeError"
    line: str  # the exception line as printed: "json.decoder.JSONDecodeError: Expecting value"
    message: str
    frames: tuple[Frame, ...]


# What a check raises when the check itself is broken: its own source does not compile
# (SYNTAX_TYPES), or one of its own files (a path under $TASK_DIR) cannot be opened. (Not a
# NameError: a check that star-imports or execs the candidate meets its missing names so.)
_OPEN_ERRORS = frozenset(
    {"FileNotFoundError", "PermissionError", "IsADirectoryError", "NotADirectoryError"}
)


def check_defect(result: ExecResult) -> str | None:
    """Where and how a check failed in its own code, when its traceback says so
    ("$TASK_DIR/check.py:7: SyntaxError: ..."): source that does not compile, in a task file
    (not in code it ran: the candidate's, a prompt's), or a task file it could not open,
    from a frame of the task's that no workspace frame follows. A verdict (an assertion, a
    missing output file) or an error raised inside the candidate's code is not a defect."""
    if result.exit_code == 0 or result.timed_out:
        return None
    error = last_python_error(result.stderr) or last_python_error(result.stdout)
    if error is None or not error.frames:
        return None
    own = [f for f in error.frames if shown_path(f.file, result.workspace)[0] or _in_task(f)]
    if error.type in SYNTAX_TYPES:
        where = error.frames[-1] if _in_task(error.frames[-1]) else None
    elif error.type in _OPEN_ERRORS and f"'{SANDBOX_TASK_DIR}/" in error.message:
        where = own[-1] if own and _in_task(own[-1]) else None
    else:
        return None
    return (
        None
        if where is None
        else f"{shown_path(where.file, result.workspace)[1]}:{where.line}: {error.line}"
    )


def _in_task(frame: Frame) -> bool:
    return PurePosixPath(frame.file).is_relative_to(SANDBOX_TASK_DIR)


def candidate_frame(error: PyError, workspace: Path) -> tuple[str, Frame] | None:
    """The innermost frame in a workspace file, as ("solution.py:12", frame)."""
    for frame in reversed(error.frames):
        inside, shown = shown_path(frame.file, workspace)
        if inside:
            return f"{shown}:{frame.line}", frame
    return None


def last_python_error(text: str) -> PyError | None:
    """The last exception a Python traceback printed in `text`, or None.

    A SyntaxError in the main script prints no "Traceback" header, only the File line, the
    code, a caret and the exception line; every other exception needs the header, so a
    checker printing "Error: ..." is not mistaken for an exception.
    """
    found: PyError | None = None
    frames: list[Frame] = []
    header = in_block = False
    for line in text.splitlines():
        if _HEADER.match(line):
            header, in_block, frames = True, True, []
            continue
        frame = _FRAME.match(line)
        if frame:
            if not in_block:
                frames = []
            in_block = True
            frames.append(Frame(frame["file"], int(frame["line"]), None))
            continue
        if in_block and line[:1] in (" ", "\t"):
            code = line.strip()
            if frames and frames[-1].code is None and code and not _CARETS.match(line):
                frames[-1] = Frame(frames[-1].file, frames[-1].line, code)
            continue
        if in_block:
            exc = _EXC_LINE.match(line)
            short = exc["type"].rsplit(".", 1)[-1] if exc else ""
            if exc and (header or short in SYNTAX_TYPES):
                found = PyError(short, line.strip(), (exc["msg"] or "").strip(), tuple(frames))
            header = in_block = False
    return found


def shown_path(file: str, workspace: Path) -> tuple[bool, str]:
    """(is the file in the workspace?, how to show it): "solution.py", "$TASK_DIR/check.py"."""
    if file.startswith("<"):  # <string>, <stdin>, <frozen runpy>: not a candidate's file
        return False, file
    path = PurePosixPath(file)
    if not path.is_absolute():  # relative to the working directory, the workspace
        return True, str(path)
    for root in (SANDBOX_WORKSPACE, PurePosixPath(workspace)):
        if path.is_relative_to(root):
            return True, str(path.relative_to(root))
    if path.is_relative_to(SANDBOX_TASK_DIR):
        return False, f"$TASK_DIR/{path.relative_to(SANDBOX_TASK_DIR)}"
    return False, file
