"""The periodic consolidation worker: a pass every N seconds, clean shutdown on SIGTERM/SIGINT.

A signal only sets a stop event: the pass in flight finishes its current merge (each merge
is one transaction), releases the lease and returns; nothing half-written is left behind.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from retrospectives.consolidate import ConsolidationReport, Consolidator
from retrospectives.errors import ConsolidationBusyError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds from "90", "45s", "10m", "2h", "1d"; ValueError otherwise."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 10m, 2h)")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set `stop` on SIGTERM/SIGINT while inside the block (main thread only)."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_periodic(
    consolidator: Consolidator,
    every_s: float,
    stop: threading.Event,
    *,
    on_report: Callable[[ConsolidationReport], None] | None = None,
    on_busy: Callable[[ConsolidationBusyError], None] | None = None,
    max_passes: int | None = None,
) -> int:
    """Run passes until `stop` is set (or `max_passes` ran); returns the number of passes."""
    passes = 0
    while not stop.is_set():
        try:
            report = consolidator.run(should_stop=stop.is_set)
        except ConsolidationBusyError as exc:
            # Another worker is on it; this one simply waits for the next tick.
            if on_busy is not None:
                on_busy(exc)
        else:
            passes += 1
            if on_report is not None:
                on_report(report)
        if max_passes is not None and passes >= max_passes:
            break
        stop.wait(every_s)
    return passes
