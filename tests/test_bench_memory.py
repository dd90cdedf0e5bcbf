"""scripts/bench_memory.py end to end at a small size: it loads, adds and recalls on a real
embedded store and writes its figures (it once broke when recall changed what it embeds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_memory_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    args = ["--sizes", "300", "--modes", "embedded", "--queries", "5", "--adds", "5"]
    args += ["--pool", "40", "--cache", str(tmp_path / "cache"), "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_memory.py"), *args],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = json.loads(out.read_text())["results"]
    assert result["mode"] == "embedded" and result["stored"] == 305
    # Every query is of a kind the store holds: recall answers each one.
    assert result["recall_mean_hits"] > 0
    assert result["add_p50_ms"] > 0 and result["recall_p50_ms"] > 0
