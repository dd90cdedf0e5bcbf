"""The bubblewrap container one sandbox phase runs in: limits, mounts, environment, user.

`bwrap_argv` builds the command line that starts `bash -c COMMAND` in a fresh container:
its namespaces, what is bound where (read-only system directories, an allowlist of `/etc`,
our interpreter's prefix, the run's workspace and `/tmp`, the task copy), the drop to an
unprivileged user and the `prlimit` limits. `sandbox_env` is the command's whole
environment. What this isolates and what it does not is described in `agent.sandbox`,
which prepares the run directory, runs the phases and reports their results.
"""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from agent.workspace import SANDBOX_WORKSPACE

# Where things appear inside the container. Fixed paths keep tracebacks free of random
# temporary names, so the same failure looks the same on every attempt.
SANDBOX_TASK_DIR = PurePosixPath("/task")

_ETC_ALLOWLIST = (
    "alternatives", "ca-certificates", "fonts", "group", "host.conf", "hosts", "ld.so.cache",
    "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf", "os-release",
    "passwd", "protocols", "python3", "python3.11", "services", "ssl", "timezone",
)  # fmt: skip
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class Limits(BaseModel):
    """Resource limits for one run of a check command."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_s: int = Field(default=60, gt=0)
    memory_mb: int = Field(default=1024, gt=0)  # address space (RLIMIT_AS), not RSS
    file_size_mb: int = Field(default=64, gt=0)  # per file, also caps the /dev/shm tmpfs
    max_procs: int = Field(default=256, gt=0)  # processes and threads of the sandbox user
    output_bytes: int = Field(default=20_000, gt=0)  # per stream, kept in ExecResult
    network: bool = False


def unprivileged_ids() -> tuple[int, int]:
    """The uid and gid of `nobody`, whom a sandbox started as root runs commands as."""
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


def bwrap_argv(
    bwrap: str,
    limits: Limits,
    drop_to: tuple[int, int] | None,
    *,
    command: str,
    run_dir: Path,
    has_task: bool,
    status_fd: int,
    judging: bool,
) -> list[str]:
    """The command line running `bash -c command` in a container over `run_dir`.

    `drop_to` is the (uid, gid) to run as when we are root (None: a user namespace).
    `judging` is the checker's phase: the workspace read-only and a `/tmp` of its own.
    bwrap writes the command's exit status as JSON to `status_fd`.
    """
    lim = limits
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid"]
    argv += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not lim.network:
        argv.append("--unshare-net")
    if drop_to is None:
        argv.append("--unshare-user")  # unprivileged: bwrap needs a user namespace
    argv += _system_binds(lim.network)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--size", str(lim.file_size_mb << 20), "--tmpfs", "/dev/shm"]
    # The checker gets a /tmp of its own: nothing the program left there is read as ours.
    argv += ["--bind", str(run_dir / ("tmp-judge" if judging else "tmp")), "/tmp"]
    # The checker's phase judges what the program left; it does not change it.
    workspace_bind = "--ro-bind" if judging else "--bind"
    argv += [workspace_bind, str(run_dir / "workspace"), str(SANDBOX_WORKSPACE)]
    if has_task:
        argv += ["--ro-bind", str(run_dir / "task"), str(SANDBOX_TASK_DIR)]
    argv += _interpreter_binds()
    # bwrap reports the command's exit status on status_fd; no report = bwrap itself failed.
    argv += ["--chdir", str(SANDBOX_WORKSPACE), "--json-status-fd", str(status_fd), "--"]
    if drop_to is not None:
        uid, gid = drop_to
        argv += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
        argv += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    # CPU: SIGXCPU at the soft limit, SIGKILL a second later.
    argv += ["prlimit", f"--cpu={lim.cpu_s}:{lim.cpu_s + 1}", f"--as={lim.memory_mb << 20}"]
    argv += [f"--fsize={lim.file_size_mb << 20}", f"--nproc={lim.max_procs}", "--core=0"]
    return [*argv, "--", "bash", "-c", command]


def sandbox_env(*, task_dir_set: bool, judging: bool = False) -> dict[str, str]:
    """The complete environment of the command: an allowlist, nothing inherited.

    The checker's phase (`judging`) gets HOME in its own /tmp and no user site-packages:
    the workspace is the program's, and a `.local/lib/python3.X/site-packages/
    usercustomize.py` planted there would otherwise run inside the checker.
    """
    python_bin = os.path.dirname(sys.executable)
    env = {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": str(SANDBOX_WORKSPACE),
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
    }
    if task_dir_set:
        env["TASK_DIR"] = str(SANDBOX_TASK_DIR)
    if judging:
        env["HOME"] = "/tmp"
        env["PYTHONNOUSERSITE"] = "1"
    return env


def _system_binds(network: bool) -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    # Without --perms the parents bwrap creates are 0700 and `nobody` could not enter them.
    args += ["--perms", "0755", "--dir", "/etc"]
    names = (*_ETC_ALLOWLIST, "resolv.conf") if network else _ETC_ALLOWLIST
    for name in names:
        path = f"/etc/{name}"
        if os.path.lexists(path):
            args += ["--ro-bind-try", path, path]
    return args


def _interpreter_binds() -> list[str]:
    """Bind our interpreter's prefix (pyenv, venv) unless it already lives under /usr."""
    args: list[str] = []
    for prefix in dict.fromkeys([os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)]):
        if prefix.startswith("/usr/") or prefix == "/usr":
            continue
        parents = [p for p in PurePosixPath(prefix).parents if str(p) != "/"]
        for parent in reversed(parents):
            args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", prefix, prefix]
    return args
