"""Every task under examples/ is well formed, solvable, and (for traps) really a trap.

Check commands run as plain subprocesses in a temp copy of the task's workspace with TASK_DIR
set, the way the task format describes; these tests do not depend on the project's sandbox.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agent.task import Task, load_task
from scripts.bench_retro import with_naive_helpers

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "examples" / "tasks"
TRAPS = ROOT / "examples" / "traps"
NAIVE = TRAPS / "_naive"

TASK_DIRS = sorted(p.parent for p in TASKS.glob("*/task.toml"))
TRAP_DIRS = sorted(p.parent for p in TRAPS.glob("*/task.toml"))
ALL_DIRS = TASK_DIRS + TRAP_DIRS

FAMILIES = {p.stem for p in NAIVE.glob("*.py")}
TRAP_NAME = re.compile(r"^(?P<family>[a-z0-9_]+?)_(?P<nn>\d\d)_(?P<domain>[a-z0-9_]+)$")
# Names that would hand the model the answer or the checker if they sat in workspace/.
FORBIDDEN_IN_WORKSPACE = re.compile(r"(^|/)(check|checker|expected|reference)[^/]*$")


def _ids(dirs: list[Path]) -> list[str]:
    return [f"{d.parent.name}/{d.name}" for d in dirs]


def _family(trap_dir: Path) -> str:
    match = TRAP_NAME.match(trap_dir.name)
    assert match, f"{trap_dir.name}: trap dirs are named <family>_<nn>_<domain>"
    assert match["family"] in FAMILIES, f"{trap_dir.name}: no _naive/{match['family']}.py"
    return match["family"]


@pytest.fixture(scope="session")
def python_on_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH whose `python` is the interpreter running the tests, with -S.

    Checkers and reference solutions must be stdlib only; -S (no site-packages) enforces
    that and skips the .pth imports that dominate interpreter start-up here.
    """
    bin_dir = tmp_path_factory.mktemp("bin")
    wrapper = bin_dir / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def run_check(
    task: Task, tmp: Path, path_env: str, files: dict[str, str | bytes]
) -> subprocess.CompletedProcess[str]:
    """Run the task's check in a fresh copy of its workspace plus `files`."""
    assert task.task_dir is not None and task.check is not None
    work = tmp / "ws"
    if task.workspace is not None:
        shutil.copytree(task.workspace, work)
    else:
        work.mkdir()
    for name, content in files.items():
        target = work / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    env = {**os.environ, "TASK_DIR": str(task.task_dir), "PATH": path_env}
    env.pop("PYTHONPATH", None)
    # The candidate's run, then the checker (the sandbox keeps them apart; here only order).
    command = f"{task.run} && {task.check}" if task.run else task.check
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=task.timeout_s,
        check=False,
    )


def reference_files(task: Task) -> dict[str, str | bytes]:
    assert task.task_dir is not None
    return {name: (task.task_dir / "reference" / name).read_bytes() for name in task.output}


def test_suite_has_the_demo_tasks_and_the_trap_families() -> None:
    names = {d.name for d in TASK_DIRS}
    assert "orders_report" in names
    assert len(TASK_DIRS) >= 5
    assert len(TRAP_DIRS) >= 40
    per_family = Counter(_family(d) for d in TRAP_DIRS)
    assert set(per_family) == FAMILIES and len(FAMILIES) >= 12
    assert all(3 <= n <= 5 for n in per_family.values()), per_family


@pytest.mark.parametrize("task_dir", ALL_DIRS, ids=_ids(ALL_DIRS))
def test_task_is_well_formed(task_dir: Path) -> None:
    task = load_task(task_dir)
    assert task.goal.strip() and task.output
    assert task.check and re.search(r"\$\{?TASK_DIR\b", task.check)
    assert task.workspace is not None, "every example ships its inputs in workspace/"
    for path in task.workspace.rglob("*"):
        rel = path.relative_to(task.workspace).as_posix()
        assert not FORBIDDEN_IN_WORKSPACE.search(rel), f"{rel} must live outside workspace/"
        assert rel not in task.output, f"{rel} is an output; the workspace must not hold it"
    for name in task.output:
        assert name in task.goal, f"the goal must name the output file {name}"
        assert (task_dir / "reference" / name).is_file(), f"reference/{name} missing"
    if task_dir.parent == TRAPS:
        assert task.tags == (_family(task_dir),) and task.scope == "traps"
        for path in task.workspace.iterdir():
            assert path.stat().st_size < 5_000, f"{path.name}: keep trap data small"
    else:
        assert task.scope == "demo"


@pytest.mark.parametrize("task_dir", ALL_DIRS, ids=_ids(ALL_DIRS))
def test_reference_passes_and_no_solution_fails(
    task_dir: Path, tmp_path: Path, python_on_path: str
) -> None:
    task = load_task(task_dir)
    passed = run_check(task, tmp_path / "reference", python_on_path, reference_files(task))
    assert passed.returncode == 0, passed.stdout + passed.stderr

    empty = run_check(task, tmp_path / "empty", python_on_path, {})
    assert empty.returncode != 0
    assert "Traceback" not in empty.stdout + empty.stderr, "checker crashed on a missing file"


@pytest.mark.parametrize("task_dir", TRAP_DIRS, ids=_ids(TRAP_DIRS))
def test_naive_solution_falls_into_the_trap(
    task_dir: Path, tmp_path: Path, python_on_path: str
) -> None:
    """The reference with its family's helpers swapped for the obvious ones must fail."""
    task = load_task(task_dir)
    reference = (task_dir / "reference" / "solution.py").read_text(encoding="utf-8")
    family, solution = with_naive_helpers(reference)
    assert task.tags == (family,)

    result = run_check(task, tmp_path, python_on_path, {"solution.py": solution})
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"the naive {family} solution passes:\n{output}"
    # It must fail on the data, not because the swap broke the program.
    broken = re.search(r"\b(SyntaxError|NameError|ImportError|ModuleNotFoundError)\b", output)
    assert not broken, output


def _one_per_checker(dirs: list[Path]) -> list[Path]:
    """One task per distinct check.py: the trap checkers are byte-identical copies."""
    seen: dict[bytes, Path] = {}
    for d in dirs:
        seen.setdefault((d / "check.py").read_bytes(), d)
    return sorted(seen.values())


CHECKER_SAMPLES = _one_per_checker(ALL_DIRS)


@pytest.mark.parametrize("task_dir", CHECKER_SAMPLES, ids=_ids(CHECKER_SAMPLES))
def test_checker_survives_malformed_output(
    task_dir: Path, tmp_path: Path, python_on_path: str
) -> None:
    """Garbage output gets a short message, not a checker traceback."""
    task = load_task(task_dir)
    if "solution.py" in task.output:
        # A program that runs but writes broken files wherever the goal names an output.
        targets = [
            name
            for name in re.findall(r"\b[\w-]+\.(?:json|md|txt)\b", task.goal)
            if name not in task.output and not (task_dir / "workspace" / name).exists()
        ]
        body = "".join(f"open({name!r}, 'w').write('{{not json')\n" for name in targets)
        files: dict[str, str | bytes] = {"solution.py": body or "pass\n"}
    else:
        files = dict.fromkeys(task.output, b"\xff\xfe not text")
    result = run_check(task, tmp_path, python_on_path, files)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Traceback" not in output, output
    assert 0 < len(output) < 800


def test_json_checker_copies_match_the_canonical_one() -> None:
    canonical = (TRAPS / "_checker.py").read_bytes()
    first_line = canonical.splitlines()[0]
    copies = [
        d / "check.py" for d in ALL_DIRS if (d / "check.py").read_bytes().startswith(first_line)
    ]
    assert len(copies) >= len(TRAP_DIRS) + 1
    stale = [str(p.relative_to(ROOT)) for p in copies if p.read_bytes() != canonical]
    assert not stale, f"copy examples/traps/_checker.py over {stale}"


def test_generator_reproduces_the_committed_traps(tmp_path: Path) -> None:
    """_generate.py is deterministic and the committed suite is its current output."""
    subprocess.run(
        [sys.executable, "-B", str(TRAPS / "_generate.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(TRAPS)
        for d in TRAP_DIRS
        for p in d.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert generated == committed
    for rel in generated:
        assert (tmp_path / rel).read_bytes() == (TRAPS / rel).read_bytes(), f"{rel} is stale"
