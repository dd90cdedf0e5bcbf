"""The sandbox's workspace on the host side: safe writes, ownership, links, removal.

Everything here runs in our process, on the directory a container gets bound as
/workspace: writing the model's files without leaving the workspace, handing the tree to the
unprivileged sandbox user, removing the links a program left that lead out of it before the
checker runs, and deleting the tree afterwards.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from pathlib import Path, PurePosixPath

from agent.errors import UnsafePathError

# Where the workspace appears inside the container (links are judged from there).
SANDBOX_WORKSPACE = PurePosixPath("/workspace")


def checked_relpath(name: str) -> str:
    """The normalised relative path, or UnsafePathError: `name` comes from the model."""
    path = PurePosixPath(name)
    if not name or "\0" in name or path.is_absolute() or ".." in path.parts or not path.parts:
        raise UnsafePathError(
            f"refusing to write {name!r}: output files must be relative paths inside the "
            "workspace, without '..'",
            path=name,
        )
    return str(path)


def write_inside(ws: Path, rel: str, text: str) -> None:
    target = ws / rel
    # resolve() follows symlinks already in the workspace copy; check before mkdir creates
    # anything, so a link such as `data -> /etc` cannot make us write outside.
    if not target.resolve().is_relative_to(ws.resolve()):
        raise UnsafePathError(f"refusing to write {rel!r}: it leads out of the workspace", path=rel)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except (IsADirectoryError, NotADirectoryError, FileExistsError) as exc:
        raise UnsafePathError(f"cannot write {rel!r}: {exc.strerror}", path=rel) from exc


def chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def make_world_readable(root: Path) -> None:
    """Add read (and, on directories, search) permission for everyone; never write."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, os.stat(dirpath).st_mode | 0o555)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)


def remove_escaping_links(ws: Path) -> list[str]:
    """Delete every symlink under `ws` whose target, seen from inside the container, is not
    in the workspace; returns them as "name -> target"."""
    removed: list[str] = []
    inside = str(SANDBOX_WORKSPACE)
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            if not path.is_symlink():
                continue
            target = os.readlink(path)
            seen_from = SANDBOX_WORKSPACE / path.parent.relative_to(ws)
            resolved = posixpath.normpath(posixpath.join(str(seen_from), target))
            if resolved != inside and not resolved.startswith(inside + "/"):
                path.unlink()
                removed.append(f"{path.relative_to(ws)} -> {target}")
    return removed


def regular_files(ws: Path) -> set[str]:
    """Relative paths of the regular files under `ws` (links are not followed)."""
    found: set[str] = set()
    for root, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path) and os.path.isfile(path):
                found.add(os.path.relpath(path, ws))
    return found


def heads_of(ws: Path, names: list[str], *, limit: int) -> dict[str, str]:
    """The first `limit` characters of each of `names` (paths relative to `ws`), as text.

    Called only once every process of the run is gone. Even so each path is opened one
    component at a time without following links, and only a regular file is read (never a
    FIFO or device, never more than a few KiB); anything else is skipped."""
    heads: dict[str, str] = {}
    for rel in names:
        raw = _read_head(ws, PurePosixPath(rel).parts, limit * 4 + 1)
        if raw is not None:
            text = raw.decode("utf-8", errors="replace")
            heads[rel] = text if len(text) <= limit else text[:limit] + "..."
    return heads


def _read_head(ws: Path, parts: tuple[str, ...], size: int) -> bytes | None:
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    fds: list[int] = []
    try:
        fds.append(os.open(ws, os.O_RDONLY | os.O_DIRECTORY | nofollow))
        for part in parts[:-1]:
            fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=fds[-1]))
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | nofollow
        fds.append(os.open(parts[-1], flags, dir_fd=fds[-1]))
        if not stat.S_ISREG(os.fstat(fds[-1]).st_mode):
            return None
        return os.read(fds[-1], size)
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def remove_tree(path: Path) -> None:
    if os.geteuid() != 0:
        # Generated code may chmod its directories to 0, which stops a non-root rmtree. Top-down
        # walk: each directory is opened up before the walk descends into it.
        for dirpath, dirnames, _files in os.walk(path):
            for name in dirnames:
                sub = os.path.join(dirpath, name)
                if not os.path.islink(sub):
                    os.chmod(sub, 0o700)
    shutil.rmtree(path)
