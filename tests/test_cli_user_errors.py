"""A user's mistake is one `error:` line and exit code 2, whatever command meets it; and a
command that only reads lessons never starts a store at a mistyped path.

Each command runs as a real subprocess on a real SQLite + chromadb store.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory import HashEmbedder, LessonDraft, Memory, MemoryConfigError, MemoryUsageError


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("errors") / "store"
    with Memory.open(str(path), embedder=HashEmbedder()) as memory:
        memory.add(
            LessonDraft(
                error_type="KeyError",
                symptom="KeyError: 'amount' on the first row",
                root_cause="the header starts with a byte order mark",
                fix="open the file with encoding='utf-8-sig'",
            )
        )
    return path


def lessonloop(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        env={
            **base,
            "LESSONLOOP_HOME": str(tmp_path / "home"),
            "LESSONLOOP_EMBEDDER": "hash",
            **env,
        },
        timeout=300,
    )


def one_error_line(proc: subprocess.CompletedProcess[str], says: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert says in proc.stderr


def test_a_bad_setting_is_an_error_line_for_every_command(tmp_path: Path, store: Path) -> None:
    commands = (["stats"], ["report", "--no-memory"], ["review"], ["lessons", "list"])
    for args in (*commands, ["mcp"], ["doctor"]):
        proc = lessonloop(
            tmp_path, *args, LESSONLOOP_MAX_ROUNDS="abc", LESSONLOOP_MEMORY=str(store)
        )
        # One line: the variable as the user set it, its value, what is wrong; no URL.
        one_error_line(proc, "LESSONLOOP_MAX_ROUNDS='abc': Input should be a valid integer")
        assert proc.stderr.count("\n") == 1 and "pydantic.dev" not in proc.stderr, args


def test_a_blank_store_path_is_refused_not_replaced_by_the_default(tmp_path: Path) -> None:
    for args in (["lessons", "--memory", "", "list"], ["mcp", "--memory", " "]):
        proc = lessonloop(tmp_path, *args)
        one_error_line(proc, "give a store directory, a .sqlite3 file or a URL, not blank")
    assert not (tmp_path / "home" / "memory").exists()  # no default store made instead
    with pytest.raises(MemoryConfigError, match="no store given"):
        Memory.open("  ", embedder=HashEmbedder())
    assert list(Path.cwd().glob("memory.sqlite3")) == []


def test_a_file_that_is_no_store_is_refused_and_left_as_it_was(tmp_path: Path, store: Path) -> None:
    """An emptied SQLite file beside a full index: reading commands made it an empty store,
    and the repair they then suggested deleted the whole index."""
    damaged = tmp_path / "damaged"
    shutil.copytree(store, damaged)
    (damaged / "memory.sqlite3").write_bytes(b"")
    for name in ("memory.sqlite3-wal", "memory.sqlite3-shm"):
        (damaged / name).unlink(missing_ok=True)
    for args in (["stats"], ["lessons", "list"], ["memory", "check", "--repair"]):
        proc = lessonloop(tmp_path, *args, LESSONLOOP_MEMORY=str(damaged))
        one_error_line(proc, "memory.sqlite3 is not a lessonloop store (it holds no lessons table)")
    assert (damaged / "memory.sqlite3").stat().st_size == 0
    # Opened anyway (the Python API creates the tables), repair refuses to empty the index.
    with Memory.open(damaged, embedder=HashEmbedder()) as memory:
        assert memory.check().orphans_in_index
        with pytest.raises(MemoryUsageError, match="repairing would empty the index"):
            memory.check(repair=True)
        assert len(memory.check().orphans_in_index) == 1


def test_a_path_the_system_refuses_is_an_error_line(tmp_path: Path, store: Path) -> None:
    missing = tmp_path / "no_such_dir"
    export = lessonloop(
        tmp_path, "lessons", "--memory", str(store), "export", "--out", str(missing / "x.jsonl")
    )
    one_error_line(export, "No such file or directory")
    blocked = tmp_path / "a_file"
    blocked.write_text("not a directory")
    report = lessonloop(tmp_path, "report", "--no-memory", "--out", str(blocked / "r.html"))
    one_error_line(report, str(blocked))
    assert not missing.exists()


def test_reading_commands_refuse_a_path_where_no_store_is(tmp_path: Path, store: Path) -> None:
    typo = tmp_path / "stroe"
    for args in (
        ["lessons", "--memory", str(typo), "list"],
        ["stats", "--memory", str(typo)],
        ["review", "--memory", str(typo)],
        ["consolidate", "--memory", str(typo), "--no-model"],
    ):
        one_error_line(lessonloop(tmp_path, *args), f"no memory store at {typo}")
    assert not typo.exists()  # nothing was started there
    # The real path works, for the retrospective commands too (--memory, as everywhere).
    listed = lessonloop(tmp_path, "lessons", "--memory", str(store), "list", "--json")
    assert listed.returncode == 0 and "byte order mark" in listed.stdout
    merged = lessonloop(tmp_path, "consolidate", "--memory", str(store), "--no-model", "--json")
    assert merged.returncode == 0, merged.stderr
    # An import may start a store.
    export = tmp_path / "all.jsonl"
    assert (
        lessonloop(
            tmp_path, "lessons", "--memory", str(store), "export", "--out", str(export)
        ).returncode
        == 0
    )
    fresh = tmp_path / "fresh"
    imported = lessonloop(tmp_path, "lessons", "--memory", str(fresh), "import", str(export))
    assert imported.returncode == 0, imported.stderr
    assert (fresh / "memory.sqlite3").is_file()


def test_keeping_an_unknown_lesson_is_an_error(tmp_path: Path, store: Path) -> None:
    proc = lessonloop(tmp_path, "review", "--memory", str(store), "--keep", "les_nope")
    one_error_line(proc, "les_nope")


def test_a_store_changes_embedder_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "hash_store"
    with Memory.open(str(path), embedder=HashEmbedder(64)) as memory:
        for n in range(3):
            memory.add(
                LessonDraft(error_type="E", symptom=f"s{n}", root_cause=f"r{n}", fix=f"f{n}")
            )
    refused = lessonloop(tmp_path, "lessons", "--memory", str(path), "list")
    one_error_line(refused, "lessonloop memory reindex --reembed")
    converted = lessonloop(
        tmp_path, "memory", "--memory", str(path), "reindex", "--reembed", "--json"
    )
    assert converted.returncode == 0 and '"indexed": 3' in converted.stdout, converted.stderr
    listed = lessonloop(tmp_path, "lessons", "--memory", str(path), "list", "--json")
    assert listed.returncode == 0 and listed.stdout.count('"id"') == 3
    with Memory.open(str(path), embedder=HashEmbedder()) as memory:
        assert memory.check().clean and not memory.reembedded_on_open


def test_an_export_is_restored_in_its_own_scopes_so_scope_is_refused(
    tmp_path: Path, store: Path
) -> None:
    export = tmp_path / "all.jsonl"
    done = lessonloop(tmp_path, "lessons", "--memory", str(store), "export", "--out", str(export))
    assert done.returncode == 0, done.stderr
    target = tmp_path / "other"
    args = ("lessons", "--memory", str(target), "import", str(export), "--scope", "billing")
    one_error_line(lessonloop(tmp_path, *args), "--scope applies to seed records")


def test_a_store_with_damaged_pages_is_an_error_line(tmp_path: Path) -> None:
    """SQLite's "database disk image is malformed" was a traceback wall (only the
    OperationalError branch of DatabaseError was caught)."""
    path = tmp_path / "damaged"
    with Memory.open(path, embedder=HashEmbedder()) as memory:
        words = [f"w{i}a w{i}b w{i}c " * 20 for i in range(300)]
        memory.add_many(
            [LessonDraft(error_type="ValueError", symptom=w, root_cause=w, fix=w) for w in words]
        )
    file = path / "memory.sqlite3"
    pages = file.stat().st_size // 4096
    with file.open("r+b") as raw:  # garbage over pages in the middle; the header survives
        raw.seek(4096 * (pages // 2))
        raw.write(bytes(range(256)) * 16 * min(20, pages // 3))
    for args in (["stats"], ["memory", "check"], ["lessons", "export"]):
        proc = lessonloop(tmp_path, *args, LESSONLOOP_MEMORY=str(path))
        one_error_line(proc, "the SQL store could not be read: database disk image is malformed")


def test_a_full_disk_under_the_output_is_an_error_line(tmp_path: Path, store: Path) -> None:
    """ENOSPC from a write names no file: it kept its traceback as if it were a bug."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    for args in (["lessons", "export"], ["lessons", "list"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run(
                [sys.executable, "-m", "agent", "lessons", "--memory", str(store), *args[1:]],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                env={**base, "LESSONLOOP_HOME": str(tmp_path), "LESSONLOOP_EMBEDDER": "hash"},
                timeout=300,
            )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip() == "error: [Errno 28] No space left on device"


def test_a_malformed_task_is_refused_before_a_store_is_made(tmp_path: Path) -> None:
    task = tmp_path / "bad_task"
    task.mkdir()
    (task / "task.toml").write_text('goal = "g"\nbogus = 1\n')
    new_store = tmp_path / "new_store"
    proc = lessonloop(tmp_path, "run", str(task), "--memory", str(new_store))
    one_error_line(proc, "unknown keys ['bogus']")
    assert not new_store.exists()


def test_replace_with_seed_records_is_refused_before_a_store_is_made(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text('{"error_type": "E", "symptom": "s", "root_cause": "r", "fix": "f"}\n')
    new_store = tmp_path / "new_store"
    proc = lessonloop(
        tmp_path, "lessons", "--memory", str(new_store), "import", str(seeds), "--replace"
    )
    one_error_line(proc, "seed records are imported without --replace")
    assert not new_store.exists()


def _without_root_powers() -> list[str]:
    """A prefix that makes file permissions bite for root too (dropping CAP_DAC_OVERRIDE)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv (util-linux): permissions cannot be made to bite")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.parametrize("what", ["files", "files and directories"])
def test_a_read_only_store_is_named_read_only_not_foreign(
    tmp_path: Path, store: Path, what: str
) -> None:
    copy = tmp_path / "backup"
    shutil.copytree(store, copy)
    for path in [copy, *copy.rglob("*")]:
        if path.is_file() or what == "files and directories":
            path.chmod(path.stat().st_mode & 0o555)
    base = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    try:
        for command in (["lessons", "list"], ["lessons", "export"], ["review"]):
            proc = subprocess.run(
                [*_without_root_powers(), sys.executable, "-m", "agent", *command],
                capture_output=True,
                text=True,
                env={**base, "LESSONLOOP_MEMORY": str(copy), "LESSONLOOP_EMBEDDER": "hash"}
                | {"LESSONLOOP_HOME": str(tmp_path / "home")},
                timeout=300,
            )
            one_error_line(proc, "is read-only")
            assert "copy the store to a writable directory" in proc.stderr
            assert "not a lessonloop store" not in proc.stderr  # it is one: leave it be
    finally:
        for path in [copy, *copy.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


def test_a_read_only_file_that_is_no_database_is_not_called_read_only(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "memory.sqlite3").write_bytes(os.urandom(8192))
    for path in (store / "memory.sqlite3", store):
        path.chmod(0o555)
    base = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    try:
        proc = subprocess.run(
            [*_without_root_powers(), sys.executable, "-m", "agent", "lessons", "list"],
            capture_output=True,
            text=True,
            env={**base, "LESSONLOOP_MEMORY": str(store), "LESSONLOOP_EMBEDDER": "hash"}
            | {"LESSONLOOP_HOME": str(tmp_path / "home")},
            timeout=300,
        )
    finally:
        store.chmod(0o755)
    one_error_line(proc, "is not a lessonloop store (file is not a database)")
    assert "read-only" not in proc.stderr  # copying it elsewhere would not help
