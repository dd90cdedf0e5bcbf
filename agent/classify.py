"""Classify what a check command really did into a short, typed Feedback.

The reflector reads a few lines, not a log, so the point here is compression: the kind of
failure, the candidate's file and line, and the one message that matters. (A check that broke
in its own code is no verdict at all: `agent.pytrace.check_defect`, which `agent.checks`
asks first and turns into `TaskCheckError`.) Decisions, in order:

1. timed out                                   -> timeout
2. exit status 0                               -> success
3. a limit was hit (SIGKILL/SIGXCPU/SIGXFSZ/SIGSEGV/SIGBUS, MemoryError, errno 11/12/27,
   BlockingIOError, "Cannot allocate memory", fork failures)  -> resource_error
4. the last Python traceback is a SyntaxError/IndentationError/TabError -> syntax_error
5. a network error (refused, unreachable, name resolution) -> runtime_error with a hint that
   the sandbox has no network; an import of a module that is not installed -> runtime_error
   with a hint to do without it (a small model reads "No module named 'pandas'" and imports
   pandas again in every round)
6. the last traceback has no frame in the workspace: the checker (in `$TASK_DIR`, `-c` code,
   the standard library) raised, e.g. an AssertionError, so the candidate was wrong rather
   than crashing                                -> check_failed
7. any other traceback                         -> runtime_error at the innermost workspace frame
8. killed by another signal                    -> runtime_error
9. non-zero exit without a traceback           -> check_failed, with the key output lines

A check may report partial credit with a stdout line `LESSONLOOP_SCORE 7/9` (the last counts):
it becomes `Feedback.credit` (0..1; 1 on success), which ranks failing candidates. The
line is not shown to the model as a message. It ranks, it never passes anything: a
candidate that prints such a line itself gains at most a better rank among failures.

The checker's source lines never enter the feedback (a traceback through `check.py` shows
`assert result == 42`, which would hand the model the expected answer); only what the checker
chose to print does. The full output stays in the log at `log_path`.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

from agent.evidence import named_keys
from agent.feedback import Feedback, FeedbackKind
from agent.pytrace import (
    SYNTAX_TYPES,
    PyError,
    candidate_frame,
    last_python_error,
    shown_path,
)
from agent.sandbox import ExecResult

_MAX_FIELD = 300  # characters per Feedback field; the compression is the point


_RESOURCE_SIGNALS = {
    signal.SIGKILL: "killed by SIGKILL (CPU hard limit or out of memory)",
    signal.SIGXCPU: "CPU time limit exceeded (SIGXCPU)",
    signal.SIGXFSZ: "file size limit exceeded (SIGXFSZ)",
    signal.SIGSEGV: "segmentation fault (SIGSEGV), often the memory limit",
    signal.SIGBUS: "bus error (SIGBUS), often a full memory-backed file system",
}
# errno 11 EAGAIN (fork refused), 12 ENOMEM, 27 EFBIG (file too large).
_RESOURCE_ERRNO = re.compile(r"\[Errno (11|12|27)\]")
_RESOURCE_TEXT = re.compile(
    r"Cannot allocate memory|Resource temporarily unavailable|File too large"
    r"|File size limit exceeded|std::bad_alloc|fork: retry|out of memory",
    re.IGNORECASE,
)
_NETWORK = re.compile(
    r"Errno (101|111|-2|-3|-5)\]|Network is unreachable|Connection refused"
    r"|Name or service not known|Temporary failure in name resolution",
)
_NETWORK_TYPES = frozenset({"gaierror", "herror", "ConnectionRefusedError", "URLError"})
# Lines that say what was wrong; a strong one beats a weak one ("1 failed in 0.1s").
_STRONG_LINE = re.compile(
    r"expected|assert|mismatch|wrong|differ|incorrect|\bgot\b|!=|should", re.IGNORECASE
)
# Next best: what is absent or extra ("missing key 'x'"); a program's own warning may say so
# too ("config not found"), so these count only where no strong line is.
_MIDDLE_LINE = re.compile(r"missing|unexpected|not found", re.IGNORECASE)
# A list's tail ("... and 5 more") says how many, not what.
_CONTINUATION = re.compile(r"^\s*(?:\.\.\.|…)?\s*\(?and \d+ more\b", re.IGNORECASE)
_WEAK_LINE = re.compile(r"fail|error|invalid", re.IGNORECASE)
# Run-to-run noise that would make the same failure look new to Feedback.signature().
_NOISE = (
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x..."),
    (re.compile(r"\bin \d+(?:\.\d+)?s\b"), "in Ns"),
)


def classify(result: ExecResult, *, log_path: Path | None = None) -> Feedback:
    """Turn an execution result into Feedback (stage "execution"); see the module docstring."""
    feedback = _classify(result, log_path)
    if feedback.kind == "check_failed" and result.program_output:
        feedback = feedback.model_copy(update={"program_said": program_said(result.program_output)})
    if feedback.kind == "check_failed" and result.written:
        wrote = program_wrote(result.written, f"{feedback.key_message or ''}\n{feedback.summary}")
        feedback = feedback.model_copy(update={"program_wrote": wrote})
    # stdout only: the checker prints there, last; a line on stderr would outrank it.
    credit = 1.0 if feedback.passed else partial_credit(result.stdout)
    return feedback.model_copy(update={"credit": credit}) if credit is not None else feedback


def program_wrote(written: dict[str, str], message: str) -> str | None:
    """The start of each file the program wrote that the check's message names as a whole
    (`result.json is not valid JSON`, `result.json: missing key 'x'`), quoted; None when it
    names none, or only a value inside it (`result.json['x']: wrong value`): such a check
    already says what it read there. A verdict on the shape inside it
    (`result.json['x']: unexpected key 'sum'`, `agent.evidence.named_keys`) does not: the
    keys the program wrote are what the refiner compares with the task's. A name without a
    suffix ('out') is too likely a word."""
    inside = "" if named_keys(message) else r"\["
    named = [
        f"{name}: {head!r}"
        for name, head in written.items()
        if "." in Path(name).name
        and re.search(rf"(?<![\w.-]){re.escape(Path(name).name)}(?![\w{inside}-]|\.\w)", message)
    ]
    return "; ".join(named) or None


def program_said(output: str) -> str | None:
    """A digest of what a program printed: its most frequent kinds of line, one example each.

    Lines are alike when their first two words match once digits are dropped, so a message
    printed for every row ("Skipping expense: 2026-02-01 by Ana due to invalid cost format.")
    shows once with its count: a program that hid its error and wrote wrong totals says here
    what it skipped. None when it printed nothing.
    """
    groups: dict[str, list[str]] = {}
    for line in _nonempty_lines(output):
        groups.setdefault(" ".join(_DIGITS.sub("", line).split()[:2]), []).append(line)
    if not groups:
        return None
    parts = []
    for lines in sorted(groups.values(), key=len, reverse=True)[:3]:
        example = lines[0] if len(lines[0]) <= 160 else lines[0][:157] + "..."
        more = f" and {len(lines) - 1} more like it" if len(lines) > 1 else ""
        parts.append(f"{example!r}{more}")
    rest = len(groups) - len(parts)
    return _clip("; ".join(parts) + (f"; {rest} other kind(s) of line" if rest > 0 else ""))


_DIGITS = re.compile(r"\d+")


_SCORE = re.compile(
    r"^LESSONLOOP_SCORE[ \t]+(\d+(?:\.\d+)?)[ \t]*/[ \t]*(\d+(?:\.\d+)?)[ \t]*$", re.M
)


def partial_credit(output: str) -> float | None:
    """The last `LESSONLOOP_SCORE A/B` line of a check's output as A/B in [0, 1], else None."""
    found = _SCORE.findall(output)
    if not found:
        return None
    got, total = (float(x) for x in found[-1])
    return None if total <= 0 else min(1.0, max(0.0, got / total))


def _classify(result: ExecResult, log_path: Path | None) -> Feedback:
    if result.timed_out:
        last = _last_lines(result, 1)
        # No duration in key_message: it feeds Feedback.signature(), which must be stable.
        key = "did not finish within the time limit" + (f"; last output: {last[0]}" if last else "")
        summary = f"timed out after {result.duration_s:.1f} s (wall clock)"
        return _feedback("timeout", summary, log_path, key_message=key)
    if result.exit_code == 0:
        return _feedback("success", f"passed in {result.duration_s:.2f} s", log_path)
    error = last_python_error(result.stderr) or last_python_error(result.stdout)
    resource = _resource_error(result, error, log_path)
    if resource is not None:
        return resource
    if error is not None:
        return _from_python_error(result, error, log_path)
    if result.signal is not None:
        name = _signal_name(result.signal)
        key = f"the process was killed by {name}"
        return _feedback("runtime_error", key, log_path, error_type=name, key_message=key)
    return _check_failed(result, log_path)


def _from_python_error(result: ExecResult, error: PyError, log_path: Path | None) -> Feedback:
    if error.type in SYNTAX_TYPES:
        frame = error.frames[-1] if error.frames else None
        location = f"{shown_path(frame.file, result.workspace)[1]}:{frame.line}" if frame else None
        return _feedback(
            "syntax_error",
            f"{error.type} at {location}: {error.message}",
            log_path,
            error_type=error.type,
            location=location,
            key_message=error.line,
            failing_example=frame.code if frame else None,
        )
    candidate = candidate_frame(error, result.workspace)
    network = error.type in _NETWORK_TYPES or bool(_NETWORK.search(error.line))
    if candidate is None and not network:
        # The checker raised, not the candidate's code: its verdict, without its source.
        return _feedback(
            "check_failed",
            f"the check rejected the candidate: {error.line}",
            log_path,
            error_type=error.type,
            key_message=error.line,
            failing_example=error.message or None,
        )
    location = candidate[0] if candidate else None
    return _feedback(
        "runtime_error",
        f"{error.type} at {location or 'unknown location'}: {error.message}",
        log_path,
        error_type=error.type,
        location=location,
        key_message=error.line,
        failing_example=candidate[1].code if candidate else None,
        issues=_hints(error, network=network),
    )


_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def _hints(error: PyError, *, network: bool) -> tuple[str, ...]:
    """What the environment rules out, said as an issue the refiner must act on."""
    if network:
        return ("the sandbox has no network access: do not download or connect anywhere",)
    name = missing_module(error.type, error.message)
    return (missing_module_issue(name),) if name else ()


def missing_module(error_type: str | None, message: str | None) -> str | None:
    """The module an import error says is not there ("No module named 'X'"), or None."""
    if error_type not in ("ModuleNotFoundError", "ImportError"):
        return None
    found = _NO_MODULE.search(message or "")
    return found.group(1) if found else None


def missing_module_issue(name: str) -> str:
    return (
        f"'{name}' cannot be imported where the program runs, and nothing can be installed "
        f"there: rewrite the program without {name}, with the Python standard library"
    )


def _resource_error(
    result: ExecResult, error: PyError | None, log_path: Path | None
) -> Feedback | None:
    """A limit was hit: the fix is a leaner approach (or a retry), not a logic change."""
    sig = result.signal
    if sig is not None and sig in _RESOURCE_SIGNALS:
        reason = _RESOURCE_SIGNALS[signal.Signals(sig)]
        return _feedback(
            "resource_error", reason, log_path, error_type=_signal_name(sig), key_message=reason
        )
    if error is not None:
        hit = (
            error.type.endswith("MemoryError")  # also numpy's _ArrayMemoryError
            or error.type == "BlockingIOError"
            or bool(_RESOURCE_ERRNO.search(error.line))
        )
        if not hit:
            return None
        candidate = candidate_frame(error, result.workspace)
        return _feedback(
            "resource_error",
            f"resource limit hit: {error.line}",
            log_path,
            error_type=error.type,
            location=candidate[0] if candidate else None,
            key_message=error.line,
            failing_example=candidate[1].code if candidate else None,
        )
    for line in reversed(_last_lines(result, 20)):
        if _RESOURCE_TEXT.search(line):
            return _feedback(
                "resource_error", f"resource limit hit: {line}", log_path, key_message=line
            )
    return None


def _check_failed(result: ExecResult, log_path: Path | None) -> Feedback:
    """Non-zero exit without a traceback: keep the lines that say what was wrong."""
    lines = _nonempty_lines(result.stdout) + _nonempty_lines(result.stderr)
    lines = [line for line in lines if not _CONTINUATION.match(line)] or lines
    strong = [line for line in lines if _STRONG_LINE.search(line)]
    middle = [line for line in lines if _MIDDLE_LINE.search(line)]
    weak = [line for line in lines if _WEAK_LINE.search(line)]
    context = list(dict.fromkeys(strong[-3:] or middle[-3:] or weak[-3:] or lines[-3:]))
    key = context[-1] if context else f"exit status {result.exit_code} with no output"
    return _feedback(
        "check_failed",
        f"check failed (exit {result.exit_code}): {key}",
        log_path,
        key_message=key,
        failing_example="\n".join(context) if len(context) > 1 else None,
    )


def _feedback(
    kind: FeedbackKind,
    summary: str,
    log_path: Path | None,
    *,
    error_type: str | None = None,
    location: str | None = None,
    key_message: str | None = None,
    failing_example: str | None = None,
    issues: tuple[str, ...] = (),
) -> Feedback:
    return Feedback(
        kind=kind,
        stage="execution",
        summary=_clip(summary.strip()) or kind,
        error_type=error_type,
        location=location,
        key_message=_clip(key_message),
        failing_example=_clip(failing_example),
        issues=issues,
        log_path=log_path,
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _nonempty_lines(text: str) -> list[str]:
    stripped = (line.strip() for line in text.splitlines())
    return [line for line in stripped if line and not line.startswith("LESSONLOOP_SCORE")]


def _last_lines(result: ExecResult, n: int) -> list[str]:
    return (_nonempty_lines(result.stdout) + _nonempty_lines(result.stderr))[-n:]


def _clip(text: str | None) -> str | None:
    """Short, and stable across runs: memory addresses would make equal failures differ."""
    if text is None:
        return None
    for pattern, replacement in _NOISE:
        text = pattern.sub(replacement, text)
    return text if len(text) <= _MAX_FIELD else text[: _MAX_FIELD - 3] + "..."
