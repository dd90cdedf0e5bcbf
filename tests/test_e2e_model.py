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
