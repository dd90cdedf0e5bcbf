"""`python -m agent serve` as a real subprocess: started on a free loopback port, stopped."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.console.seed import env_for

_URL = re.compile(r"lessonloop console on (http://\S+)")


@contextmanager
def console(home: Path, store: str | Path, results: Path, *extra: str) -> Iterator[str]:
    """Start the console on port 0 and yield the URL it printed; SIGINT stops it."""
    log = home / "console-stderr.log"
    home.mkdir(parents=True, exist_ok=True)
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "serve", "--memory", str(store)]
            + ["--results-dir", str(results), *extra],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env_for(home),
        )
    try:
        yield _wait_for_url(proc, log)
    finally:
        proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly, the store is closed
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text()


def _wait_for_url(proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _URL.search(log.read_text())
        if found:
            return found.group(1)
        if proc.poll() is not None:
            raise AssertionError(f"the console exited {proc.returncode}: {log.read_text()}")
        time.sleep(0.1)
    raise AssertionError(f"the console printed no URL in {timeout} s: {log.read_text()}")
