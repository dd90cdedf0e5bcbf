"""Every hostile candidate of scripts/bench_hostile.py: real sandbox, real trap run + check.

None passes; each is classified with one of its expected feedback kinds; the host canary is
unchanged, the planted API key never appears in the output, no sandbox process outlives it.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.container import Limits
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from scripts.bench_hostile import (
    HOSTILE,
    TASK_DIR,
    _process_table,
    run_case,
    sandbox_user_processes,
)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(cpu_s=8, memory_mb=1024, file_size_mb=64))


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


def test_the_suite_is_large_enough() -> None:
    assert len(HOSTILE) >= 25


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_candidate_is_contained(
    sandbox: Sandbox, task: Task, tmp_path: Path, name: str
) -> None:
    outcome = run_case(name, sandbox, task, tmp_path, timeout_s=8.0)
    assert not outcome.passed, outcome
    assert outcome.kind in outcome.expected, outcome
    assert outcome.canary_intact and not outcome.secret_leaked, outcome
    assert outcome.leftover_processes == 0, outcome


FOREIGN_SANDBOX = """
import sys
from agent.container import Limits
from agent.sandbox import Sandbox
Sandbox(Limits(cpu_s=30, memory_mb=256, file_size_mb=8)).run(
    "python3 -c 'import time; print(1, flush=True); time.sleep(20)'",
    files={}, workspace=None, task_dir=None, timeout_s=30)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox user is us when not root")
def test_leftovers_are_ours_not_another_processs_sandbox() -> None:
    """A benchmark's sandbox running beside the suite is not our leftover; a process of the
    sandbox user that we started (or that was orphaned) is."""
    root = Path(__file__).resolve().parents[1]
    foreign = subprocess.Popen([sys.executable, "-c", FOREIGN_SANDBOX], cwd=root)
    ours = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _nobody_processes():
            time.sleep(0.2)
        assert _nobody_processes(), "the other sandbox never started"
        assert sandbox_user_processes() == 0
        ours = subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sleep", "30"]
        )
        time.sleep(0.5)
        assert sandbox_user_processes() == 1
        # An orphan (its parent gone, as an escapee's would be) counts too.
        subprocess.run(
            ["bash", "-c", "setsid setpriv --reuid=nobody --regid=nogroup --clear-groups "
             "sleep 30 >/dev/null 2>&1 &"],
            check=True,
        )  # fmt: skip
        time.sleep(0.5)
        assert sandbox_user_processes() == 2
    finally:
        subprocess.run(["pkill", "-u", "nobody", "-f", "^sleep 30$"], check=False)
        for proc in (ours, foreign):
            if proc is not None:
                proc.kill()
                proc.wait()


def _nobody_processes() -> int:
    uid = pwd.getpwnam("nobody").pw_uid
    return sum(1 for owner, _, _ in _process_table().values() if owner == uid)
