"""`lessonloop demo` end to end on a scripted model: real traps, sandbox, memory, MiniLM.

The scripted model plays a worker that falls into the default pair's trap (a byte order mark
before the CSV header) on task A and fixes it when refining; the test checks what the demo
claims against the store and the runs. The real model's demo: tests/test_demo_model.py (what
it claims) and the README's "Status" (what it showed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.app.demo import DEFAULT_TASKS
from scripts.bench_retro import with_naive_helpers
from tests.helpers import GEN, REFINE, code, fix

TRAPS = Path(__file__).resolve().parents[1] / "examples" / "traps"
LESSON = "You write one lesson"
ANALYSIS = json.dumps(
    {
        "root_cause": "the CSV starts with a UTF-8 byte order mark, which plain utf-8 keeps "
        "in the first header name",
        "fix": "open the CSV with encoding='utf-8-sig' so the mark is dropped",
        "applies_when": "CSV files exported by spreadsheet programs",
    }
)


def reference(task: str) -> str:
    return (TRAPS / task / "reference" / "solution.py").read_text(encoding="utf-8")


def demo(
    tmp_path: Path, replies: object, *args: str, **env_vars: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(replies))
    # One generation per round 1: the replies script each draw.
    env = {
        **os.environ,
        "LESSONLOOP_HOME": str(tmp_path / "home"),
        "LESSONLOOP_FIRST_POOL": "1",
        **env_vars,
    }
    return subprocess.run(
        [sys.executable, "-m", "agent", "demo", "--model", f"scripted:{script}", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_demo_stores_a_verified_lesson_and_task_b_recalls_it(tmp_path: Path) -> None:
    a, b = (reference(name) for name in DEFAULT_TASKS)
    naive_a, naive_b = with_naive_helpers(a)[1], with_naive_helpers(b)[1]
    replies = {
        # A: naive (fails on the BOM); B with memory: right at once; B alone: naive.
        GEN: [code(naive_a), code(b), code(naive_b)],
        REFINE: [fix(a, "read with utf-8-sig"), fix(b, "read with utf-8-sig")],
        LESSON: [ANALYSIS],
    }
    proc = demo(tmp_path, replies, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    first, second, third = data["steps"]
    assert first["passed"] and first["rounds"] == 2 and first["feedback_kinds"][0] != "success"
    (lesson,) = first["lessons_stored"]
    assert "verified change:" in lesson["fix"]  # the code change that made the run pass
    assert second["lessons_recalled"] == [lesson["id"]] and second["rounds"] == 1
    assert third["with_memory"] is False and third["rounds"] == 2 and third["passed"]
    assert data["learned"] is True and "with the lesson: passed in 1 round(s)" in data["verdict"]
    # The demo's store is kept and holds exactly what the demo said.
    store = Path(data["memory"])
    assert store.is_relative_to(tmp_path / "home" / "demo")
    listed = subprocess.run(
        [sys.executable, "-m", "agent", "lessons", "--memory", str(store), "list", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "LESSONLOOP_HOME": str(tmp_path / "home")},
        timeout=300,
    )
    assert [item["id"] for item in json.loads(listed.stdout)["items"]] == [lesson["id"]]


def test_demo_says_plainly_when_nothing_was_learned(tmp_path: Path) -> None:
    naive_a = with_naive_helpers(reference(DEFAULT_TASKS[0]))[1]
    # Task A is never solved: no verified fix, so no lesson, and the verdict says so.
    replies = {GEN: [code(naive_a)], REFINE: [fix(naive_a + "\n# v2\n")]}
    proc = demo(tmp_path, replies, LESSONLOOP_POOL_SIZE="1", LESSONLOOP_MAX_ROUNDS="2")
    assert proc.returncode == 0, proc.stderr
    assert "task A stored no lesson: the task was not solved" in proc.stdout
    # ...and it does not spend two more runs comparing nothing with nothing.
    assert "task B" not in proc.stderr


def test_demo_never_writes_into_the_configured_memory(tmp_path: Path) -> None:
    real = tmp_path / "assistant-memory"
    naive_a = with_naive_helpers(reference(DEFAULT_TASKS[0]))[1]
    replies = {GEN: [code(naive_a)], REFINE: [fix(naive_a + "\n# v2\n")]}
    proc = demo(
        tmp_path, replies, LESSONLOOP_POOL_SIZE="1", LESSONLOOP_MAX_ROUNDS="2",
        LESSONLOOP_MEMORY=str(real),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not real.exists()


def test_a_missing_task_b_fails_before_task_a_runs(tmp_path: Path) -> None:
    proc = demo(tmp_path, [], str(TRAPS / DEFAULT_TASKS[0]), str(tmp_path / "nope"))
    assert proc.returncode == 2 and "error:" in proc.stderr and "task A" not in proc.stderr
