"""Run a task's check command on a candidate, isolated, with limits, and report what happened.

Every run gets a fresh temporary directory holding a copy of the task's `workspace/` plus the
model's output files. The command runs as `bash -c COMMAND` inside a bubblewrap (`bwrap`)
container; we require bubblewrap (Debian package `bubblewrap`) and refuse to run without it.

Inside the container the command sees:

- `/workspace`: the fresh copy, writable, the working directory and `$HOME`;
- `/tmp`: a second fresh directory (`$TMPDIR`), deleted with the run;
- `/task`: a read-only copy of the task directory (`$TASK_DIR`), when one is given;
- read-only system directories (`/usr` and the merged `/bin`, `/lib`...), the running
  interpreter's prefix (first on `PATH`, so `python` is our Python with its packages) and an
  allowlist of harmless `/etc` files (passwd, group, hosts, ld.so.cache, ssl, alternatives...).

Isolated (verified by tests/test_sandbox.py):

- network: an empty network namespace with only its own loopback; nothing on the host,
  not even the host's 127.0.0.1, is reachable (unless `Limits.network` is true);
- filesystem: nothing outside the list above exists; `/root`, `/home`, the project
  tree, `/etc/pip.conf` and similar are invisible; system directories are read-only;
- environment: only an allowlist of variables reaches the command, so no API key, token or
  password from our environment ever reaches generated code;
- privileges: as root (here and in CI) the command runs as `nobody` with no capabilities and
  `no_new_privs`; without root it runs as the calling user inside a user namespace;
- processes: own PID namespace; when the command ends or times out every process it started
  is killed, including daemons it detached;
- limits (per process, util-linux `prlimit`): CPU seconds, address space, file size,
  process count (counted per user: every process of the sandbox user on the machine counts),
  no core files; a wall-clock timeout.

- the checker's answers: with a `program` (the task's `run`), the candidate's program runs
  first without `/task`; the checker runs after it, in a new container with `/task`, the
  workspace read-only, its own `/tmp`, HOME there and no user site-packages, so nothing
  the program planted (a `json.py`, a `usercustomize.py`, a process left behind) runs in
  it; symlinks the program left that lead out of the workspace (`result.json ->
  /task/expected.json`) are removed before the checker runs (tests/test_cheating.py).

Not isolated: the kernel (no seccomp filter), total disk use (only each file's size is
capped), the CPU share while the command runs, `/proc` views of system-wide data, and a
task without `run`: its one check command (e.g. a checker that imports the candidate, as
HumanEval's does) runs candidate code in the same container as `/task`. A run that hits a
limit is reported, never raised; only a broken sandbox raises `SandboxError`.

Limits are applied with `prlimit` inside the container rather than `setrlimit` in a
`preexec_fn`: `preexec_fn` may deadlock in a process that has threads (torch, chromadb).

This module prepares each run's directory, runs its phases and reports them;
`agent.container` builds the container itself (`Limits`, the bwrap command line, the
environment).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from agent.capture import Capture, pump
from agent.container import Limits, bwrap_argv, sandbox_env, unprivileged_ids
from agent.errors import ConfigurationError, SandboxError
from agent.workspace import (
    checked_relpath,
    chown_tree,
    heads_of,
    make_world_readable,
    regular_files,
    remove_escaping_links,
    remove_tree,
    write_inside,
)

logger = logging.getLogger(__name__)

# The log file keeps at most this much of each stream (head and tail).
LOG_STREAM_BYTES = 512_000

# One phase of a run: its result and the full captures the log is written from.
_Phase = tuple["ExecResult", Capture, Capture]
# What of the files a program wrote its check result may show.
WRITTEN_FILES, WRITTEN_CHARS = 3, 200
_EXIT_CODE = re.compile(rb'"exit-code"\s*:\s*(-?\d+)')


class ExecResult(BaseModel):
    """What a check command did.

    `exit_code` is the status the command exited with (None when our timeout killed it).
    `signal` is the signal that ended it: the container reports a command killed by signal N
    as status 128+N (the shell convention), so both are set then. `stdout`/`stderr` keep the
    head and tail of each stream within `Limits.output_bytes`; `truncated` says whether
    anything was cut. `workspace` is where the command ran; it is deleted after the run
    unless the sandbox keeps workspaces.
    """

    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    truncated: bool
    workspace: Path
    # With a program phase before the check: what the candidate's program itself printed
    # (stdout then stderr); '' when there was no such phase.
    program_output: str = ""
    # With a program phase that exited 0: the start of each file it created in the
    # workspace (at most WRITTEN_FILES, those the check command names first; WRITTEN_CHARS
    # each), read before the checker ran.
    written: dict[str, str] = {}


class Sandbox:
    """Runs check commands in a fresh, isolated, limited workspace (see the module docstring)."""

    def __init__(self, limits: Limits, *, keep_workspaces: bool = False) -> None:
        """Check that bubblewrap works here; raise SandboxError if it does not."""
        self.limits = limits
        self.keep_workspaces = keep_workspaces
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxError(
                "bubblewrap (bwrap) is not installed; the sandbox needs it to isolate generated "
                "code (Debian/Ubuntu: apt-get install bubblewrap)"
            )
        self._bwrap = bwrap
        self._drop_to = unprivileged_ids() if os.geteuid() == 0 else None
        probe = self.run("exit 0", files={}, workspace=None, task_dir=None, timeout_s=30)
        if probe.exit_code != 0:
            raise SandboxError(f"sandbox self-test failed: {probe.stderr.strip()[:1000]}")

    def run(
        self,
        command: str,
        *,
        files: Mapping[str, str],
        workspace: Path | None,
        task_dir: Path | None,
        timeout_s: float,
        log_path: Path | None = None,
        program: str | None = None,
    ) -> ExecResult:
        """Run `bash -c command` on a fresh copy of `workspace` plus `files`.

        With `program`, two phases share the workspace: first `program` (the candidate's
        own run) without the task directory, so nothing it runs can read or rewrite what
        the checker compares against; then, only if it exited 0 within the time limit,
        `command` (the checker) with the task directory and the workspace read-only. The
        result is the failing phase's, or both outputs with the checker's verdict.

        `files` maps workspace-relative paths to text (the model's output). A path that is
        absolute, contains `..`, or leads out of the workspace through a symlink raises
        UnsafePathError before anything is written. A missing `workspace` or `task_dir`
        raises ConfigurationError; a broken sandbox raises SandboxError. Everything the
        command does, including crashes, limits and timeouts, is reported in the ExecResult.
        When `log_path` is given the log (up to about 1 MB per phase) is written there.
        """
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        targets = {checked_relpath(name): text for name, text in files.items()}
        for label, path in (("workspace", workspace), ("task directory", task_dir)):
            if path is not None and not path.is_dir():
                raise ConfigurationError(f"{label} {path} is not a directory")
        run_dir = Path(tempfile.mkdtemp(prefix="lessonloop-run-"))
        try:
            self._prepare(run_dir, workspace, task_dir, targets)
            has_task = task_dir is not None
            phases: list[_Phase] = []
            written: dict[str, str] = {}
            if program is not None:
                env = sandbox_env(task_dir_set=False)
                before = regular_files(run_dir / "workspace")
                phases.append(self._execute(program, run_dir, False, env, timeout_s))
                if phases[0][0].exit_code == 0 and not phases[0][0].timed_out:
                    # Exited by itself: every process of its namespace is gone.
                    new = regular_files(run_dir / "workspace") - before
                    named = sorted(
                        new, key=lambda rel: (PurePosixPath(rel).name not in command, rel)
                    )
                    written = heads_of(run_dir / "workspace", named[:WRITTEN_FILES],
                                       limit=WRITTEN_CHARS)  # fmt: skip
            first = phases[0][0] if phases else None
            removed: list[str] = []
            if first is not None:
                # A link the program left (result.json -> /task/expected.json) would show
                # the checker its own answer: links out of the workspace go before it runs.
                removed = remove_escaping_links(run_dir / "workspace")
            if first is None or (first.exit_code == 0 and not first.timed_out):
                left = timeout_s - (first.duration_s if first else 0.0)
                env = sandbox_env(task_dir_set=has_task, judging=first is not None)
                phases.append(
                    self._execute(
                        command, run_dir, has_task, env, max(left, 1.0), judging=first is not None
                    )
                )
            if log_path is not None:
                _write_log(log_path, phases)
            result = _combined([phase[0] for phase in phases])
            if written:
                result = result.model_copy(update={"written": written})
            if removed:
                note = "".join(
                    f"sandbox: removed {link} (points outside the workspace)\n" for link in removed
                )
                result = result.model_copy(update={"stderr": note + result.stderr})
            return result
        finally:
            if not self.keep_workspaces:
                remove_tree(run_dir)

    def _prepare(
        self,
        run_dir: Path,
        workspace: Path | None,
        task_dir: Path | None,
        targets: Mapping[str, str],
    ) -> None:
        ws, tmp, judge_tmp = run_dir / "workspace", run_dir / "tmp", run_dir / "tmp-judge"
        if workspace is not None:
            # Symlinks stay symlinks: we never copy a file from wherever a link points.
            shutil.copytree(workspace, ws, symlinks=True)
        else:
            ws.mkdir()
        tmp.mkdir()
        judge_tmp.mkdir()
        if task_dir is not None:
            # A copy, not a bind mount: the task directory may sit under a private parent or
            # be private itself (pytest's tmp dirs are 0700), and `nobody` must read it.
            task_copy = run_dir / "task"
            shutil.copytree(task_dir, task_copy, symlinks=True)
            make_world_readable(task_copy)
        for rel, text in targets.items():
            write_inside(ws, rel, text)
        if self._drop_to is not None:
            uid, gid = self._drop_to
            for root in (ws, tmp, judge_tmp):
                chown_tree(root, uid, gid)

    def _execute(
        self,
        command: str,
        run_dir: Path,
        has_task: bool,
        env: dict[str, str],
        timeout_s: float,
        *,
        judging: bool = False,
    ) -> _Phase:
        capacity = max(LOG_STREAM_BYTES, self.limits.output_bytes)
        out, err, status = Capture(capacity), Capture(capacity), Capture(4096)
        status_r, status_w = os.pipe()
        start = time.monotonic()
        try:
            argv = bwrap_argv(
                self._bwrap,
                self.limits,
                self._drop_to,
                command=command,
                run_dir=run_dir,
                has_task=has_task,
                status_fd=status_w,
                judging=judging,
            )
            proc = _spawn(argv, env, status_w)
        finally:
            os.close(status_w)
        with os.fdopen(status_r, "rb") as status_pipe, proc:
            streams = {proc.stdout: out, proc.stderr: err, status_pipe: status}
            finished = False
            try:
                timed_out = pump(proc, streams, start + timeout_s)
                finished = not timed_out
            finally:
                # Also on KeyboardInterrupt: killing bwrap tears down its PID namespace.
                if not finished:
                    _kill_group(proc)
                    pump(proc, streams, time.monotonic() + 2)
            duration = time.monotonic() - start
        match = _EXIT_CODE.search(status.render(4096)[0].encode())
        if match is None and not timed_out:
            raise SandboxError(f"bwrap failed to start the command: {err.render(2000)[0].strip()}")
        exit_code = None if timed_out or match is None else int(match.group(1))
        sig: int | None = signal.SIGKILL.value if timed_out else None
        if exit_code is not None and 128 < exit_code <= 128 + 64:
            sig = exit_code - 128
        stdout, cut_out = out.render(self.limits.output_bytes)
        stderr, cut_err = err.render(self.limits.output_bytes)
        result = ExecResult(
            command=command,
            exit_code=exit_code,
            signal=sig,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=round(duration, 3),
            truncated=cut_out or cut_err,
            workspace=run_dir / "workspace",
        )
        return result, out, err


def _spawn(argv: list[str], env: dict[str, str], status_fd: int) -> subprocess.Popen[bytes]:
    logger.debug("sandbox argv: %s", argv)
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group, killed as a whole on timeout
            pass_fds=(status_fd,),
        )
    except OSError as exc:
        raise SandboxError(f"cannot start bwrap: {exc}") from exc


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # bwrap dies, --die-with-parent kills the container's init, and the kernel then kills
    # every process left in the PID namespace, including ones that called setsid().
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    proc.wait()


def _write_log(path: Path, phases: list[_Phase]) -> None:
    blocks = []
    for result, out, err in phases:
        stdout, _ = out.render(LOG_STREAM_BYTES)
        stderr, _ = err.render(LOG_STREAM_BYTES)
        blocks.append(
            f"$ {result.command}\n"
            f"exit_code={result.exit_code} signal={result.signal} timed_out={result.timed_out} "
            f"duration_s={result.duration_s}\n"
            f"--- stdout ({out.total} bytes) ---\n{stdout}\n"
            f"--- stderr ({err.total} bytes) ---\n{stderr}\n"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(blocks), encoding="utf-8")


def _combined(results: list[ExecResult]) -> ExecResult:
    """One result for the run: the last phase's verdict, every phase's output in order."""
    last = results[-1]
    if len(results) == 1:
        return last
    return last.model_copy(
        update={
            "command": " ; then ".join(r.command for r in results),
            "stdout": "".join(r.stdout for r in results),
            "stderr": "".join(r.stderr for r in results),
            "duration_s": round(sum(r.duration_s for r in results), 3),
            "truncated": any(r.truncated for r in results),
            "program_output": results[0].stdout + results[0].stderr,
        }
    )
