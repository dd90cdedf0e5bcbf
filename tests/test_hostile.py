"""Every hostile candidate of scripts/bench_hostile.py: real sandbox, real trap run + check.

None passes; each is classified with one of its expected feedback kinds; the host canary is
unchanged, the planted API key never appears in the output, no sandbox process outlives it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.container import Limits
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from scripts.bench_hostile import HOSTILE, TASK_DIR, run_case


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
