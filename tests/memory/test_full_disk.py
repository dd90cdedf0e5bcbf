"""A full disk while lessons are written: a clear error, and nothing already stored is lost.

A real 3 MiB tmpfs (root only: the test mounts it) holds a real SQLite + chromadb store;
lessons are added until the disk is full. The failing add raises MemoryBackendError (not a
raw chromadb or SQLAlchemy error); once space is back, the store opens and every lesson
that was reported as added is there and recallable.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import HashEmbedder, Memory, MemoryBackendError
from memory.types import LessonDraft, LessonQuery


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def draft(i: int) -> LessonDraft:
    filler = " ".join(f"w{i}x{j}" for j in range(250))
    return LessonDraft(
        error_type="ValueError",
        symptom=f"symptom {i} {filler}",
        root_cause=f"cause {i} {filler}",
        fix=f"fix {i} {filler}",
    )


def test_a_full_disk_is_a_backend_error_and_loses_nothing(tiny_disk: Path) -> None:
    store = str(tiny_disk / "store")
    memory = Memory.open(store, embedder=HashEmbedder(64))
    added: list[str] = []
    with pytest.raises(MemoryBackendError):
        for i in range(10_000):
            result = memory.add(draft(i))
            assert result.lesson is not None
            added.append(result.lesson.id)
    assert added, "the disk filled before the first lesson: make it larger"
    with contextlib.suppress(MemoryBackendError):
        memory.close()  # closing on a full disk may fail too; the files are what matters
    # Space back (a larger tmpfs over the same files), then: nothing that was added is lost.
    subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_disk)], check=True)
    reopened = Memory.open(store, embedder=HashEmbedder(64))
    try:
        ids = {lesson.id for lesson in reopened.list_lessons().items}
        assert set(added) <= ids
        reopened.check(repair=True)  # a lesson whose index write failed is finished here
        assert reopened.check().clean
        query = LessonQuery(text=draft(0).symptom, min_similarity=0.0, token_budget=10_000)
        assert reopened.recall(query)
    finally:
        reopened.close()
