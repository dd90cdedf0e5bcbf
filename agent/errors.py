"""Errors raised by the agent package.

    LessonloopError                 base of everything we raise on purpose
    ├── ConfigurationError          the user must fix settings, paths or a task directory
    │   ├── TaskFormatError         a task directory does not follow the task format
    │   ├── TaskCheckError          the task's check is broken in its own code or files
    │   └── ModelFileError          the GGUF is missing or its sha256 does not match
    ├── BackendError                an LLM backend or the sandbox failed; retry or fix the service
    │   ├── ModelCrashedError       the local model's worker process died (a native crash)
    │   └── SandboxError            the sandbox itself could not run (not the candidate's fault)
    ├── ModelOutputError            the model answered, but not in the shape we asked for
    │   ├── StructuredOutputError   JSON-schema output still invalid after the repair attempt
    │   └── UnsafePathError         an output path is absolute, escapes the workspace or clashes
    └── ToolCallError               an MCP tool call cannot be done as asked; the caller changes it

Failures caused by the model become feedback inside the loop; our own bugs propagate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.llm.base import Usage


class LessonloopError(Exception):
    """Base class for every error lessonloop raises on purpose."""


class ConfigurationError(LessonloopError):
    """Settings, paths or inputs the user has to fix."""


class TaskFormatError(ConfigurationError):
    """A task directory does not follow the task format (task.toml + workspace/)."""


class TaskCheckError(ConfigurationError):
    """The task's check failed in its own code or on its own files, whatever the candidate
    wrote: no round can pass it, so the run stops and says what to fix."""


class ModelFileError(ConfigurationError):
    """The model file is missing, incomplete, or fails hash verification."""


class BackendError(LessonloopError):
    """An LLM backend (server, library) failed to answer."""


class ModelCrashedError(BackendError):
    """The local model's worker process died (e.g. SIGSEGV inside llama.cpp).

    The message names the model, the signal and what to do; `returncode` is the worker's
    (negative: killed by that signal). The next call starts a fresh worker.
    """

    def __init__(self, message: str, *, model: str, returncode: int) -> None:
        super().__init__(message)
        self.model = model
        self.returncode = returncode


class SandboxError(BackendError):
    """The sandbox could not run a check (our environment, not the candidate)."""


class ModelOutputError(LessonloopError):
    """The model answered in a shape we cannot use."""


class StructuredOutputError(ModelOutputError):
    """Structured (JSON-schema) output stayed invalid after one repair attempt."""

    def __init__(
        self, message: str, *, raw: str, schema_name: str, usage: Usage | None = None
    ) -> None:
        super().__init__(message)
        self.raw = raw
        self.schema_name = schema_name
        # Tokens spent on the failed attempts still count in the run's usage.
        self.usage = usage


class UnsafePathError(ModelOutputError):
    """The model named an output file the sandbox will not write.

    The path is absolute, contains `..`, leads through a symlink out of the workspace, or
    clashes with an existing file or directory. Nothing was written outside the workspace;
    the loop turns this into feedback for the model.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ToolCallError(LessonloopError):
    """A call of an MCP tool (agent/app/mcp_tools.py) that cannot be done as asked.

    The message is read by the calling model: it says what to change (an unknown run id,
    a run already reported, a lesson of another scope).
    """
