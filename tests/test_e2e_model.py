"""The real embedded model through one full loop, via the CLI (slow: minutes on 2 cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from agent.feedback import FeedbackKind

pytestmark = pytest.mark.model


def make_task(root: Path) -> Path:
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "numbers.txt").write_text("3\n4\n5\n")
    (root / "check.py").write_text(
        "from pathlib import Path\nimport sys\n"
        "p = Path('total.txt')\n"
        "if not p.exists(): sys.exit('total.txt was not written')\n"
        "got = p.read_text().strip()\n"
        "sys.exit(0 if got in ('12', '12.0') else f'total.txt holds {got!r}, which is wrong')\n"
    )
    (root / "task.toml").write_text(
        'goal = "Write solution.py: read the integers in numbers.txt (one per line) and write '
        'their sum to total.txt."\noutput = ["solution.py"]\n'
        'check = "python solution.py && python \\"$TASK_DIR/check.py\\""\ntimeout_s = 30\n'
    )
    return root


def test_local_model_runs_a_full_loop_through_the_cli(tmp_path: Path) -> None:
    task = make_task(tmp_path / "sum_task")
    env = {
        **os.environ,
        "LESSONLOOP_HOME": str(tmp_path / "home"),
        # Share this machine's verified model cache instead of re-joining 491 MB per test.
        "LESSONLOOP_CACHE": str(Path.home() / ".lessonloop" / "cache"),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "run",
            str(task),
            "--no-memory",
            "--json",
            "--max-rounds",
            "2",
            "--model",
            "local",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1500,
    )
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["rounds"] >= 1 and data["usage"]["completion_tokens"] > 0
    assert set(data["feedback_kinds"]) <= set(get_args(FeedbackKind))
    assert data["passed"] == (data["feedback_kinds"][data["best_round"] - 1] == "success")
    if not data["passed"]:
        # a failed first attempt must have been reflected on (unless the model repeated itself)
        assert data["rounds"] == 2 or data["stop_reason"] in ("stall", "no_actionable_issue")
    assert (proc.returncode == 0) == data["passed"]
    assert "round  1  generated" in proc.stderr


def _cli_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "LESSONLOOP_HOME": str(tmp_path / "home"),
        "LESSONLOOP_CACHE": str(Path.home() / ".lessonloop" / "cache"),
    }


def _worker_of(parent: int, deadline_s: float) -> int | None:
    """The pid of `parent`'s model worker child, once it is running."""
    import time

    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == parent and b"agent.llm.worker" in cmdline:
                return int(entry.name)
        time.sleep(0.2)
    return None


def test_a_native_crash_of_the_model_is_a_clear_error_from_run(tmp_path: Path) -> None:
    """The real worker, really killed by SIGSEGV mid-run: `run` names the model and the signal."""
    import signal
    import time

    task = make_task(tmp_path / "sum_task")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "run", str(task), "--no-memory",
         "--model", "local:qwen2.5-coder-0.5b"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_cli_env(tmp_path),
    )  # fmt: skip
    try:
        worker = _worker_of(proc.pid, deadline_s=120)
        assert worker is not None, "no model worker started"
        time.sleep(1.0)  # let it load and start generating
        os.kill(worker, signal.SIGSEGV)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 2, stderr
    assert "error:" in stderr and "qwen2.5-coder-0.5b" in stderr
    assert "SIGSEGV (signal 11)" in stderr and "lessonloop doctor" in stderr
    assert "Traceback" not in stderr


def test_doctor_passes_on_this_machine_and_reports_figures(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "doctor", "--json", "--model", "local:qwen2.5-coder-0.5b"],
        capture_output=True,
        text=True,
        env=_cli_env(tmp_path),
        timeout=900,
    )
    data = json.loads(proc.stdout)
    names = [c["name"] for c in data["checks"]]
    assert names == ["build", "model", "generate", "sandbox", "embedder", "memory"]
    assert data["ok"] and proc.returncode == 0, proc.stdout
    generate = next(c for c in data["checks"] if c["name"] == "generate")
    assert generate["figures"]["tokens_per_s"] > 0


def test_doctor_fails_clearly_on_a_broken_model_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(4096))
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "doctor", "--model", f"local:{broken}"],
        capture_output=True,
        text=True,
        env=_cli_env(tmp_path),
        timeout=900,
    )
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    generate = next(line for line in lines if "generate" in line)
    assert generate.lstrip().startswith("FAIL") and "broken.gguf" in generate
    assert "Traceback" not in proc.stderr and "failed: generate" in proc.stderr


def test_run_fails_clearly_on_a_broken_model_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(4096))
    task = make_task(tmp_path / "sum_task")
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "run", str(task), "--no-memory", "--model",
         f"local:{broken}"],
        capture_output=True,
        text=True,
        env=_cli_env(tmp_path),
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "error: llama.cpp cannot load" in proc.stderr and "broken.gguf" in proc.stderr
    assert "Traceback" not in proc.stderr
