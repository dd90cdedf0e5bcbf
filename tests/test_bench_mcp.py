"""scripts/bench_mcp.py: a real server, a few calls, figures in the JSON (no time asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "mcp.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    done = subprocess.run(
        [sys.executable, "scripts/bench_mcp.py", "--embedder", "hash"]
        + ["--lessons", "6", "--recalls", "3", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    assert data["embedder"] == "hash" and data["lessons"] == 6
    assert sum(data["record_actions"].values()) == 6
    assert set(data["record_actions"]) <= {"created", "folded"}
    assert data["record"]["n"] == 6 and data["recall"]["n"] == 3
    assert data["startup_s"] > 0
    assert "recall_lessons over stdio p50" in done.stdout
