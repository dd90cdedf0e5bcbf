"""Bounded capture of a child's output: the head and the tail, never the whole stream in memory."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Mapping
from typing import IO


class Capture:
    """Keeps the head and the tail of a stream in bounded memory, and counts the rest."""

    def __init__(self, capacity: int) -> None:
        self._head_cap = capacity // 4
        self._tail_cap = capacity - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        self._tail += data
        if len(self._tail) > 2 * self._tail_cap:  # trim rarely: amortised O(1) per byte
            del self._tail[: -self._tail_cap]

    def render(self, limit: int) -> tuple[str, bool]:
        """At most `limit` bytes: the whole stream, or a quarter head and three quarters tail.

        Tracebacks and final verdicts come last, hence the larger tail.
        """
        complete = self.total == len(self._head) + len(self._tail)
        if complete and self.total <= limit:
            return decode(self._head + self._tail), False
        head_n = limit // 4
        tail_n = limit - head_n
        if complete:
            data = self._head + self._tail
            head, tail = data[:head_n], data[-tail_n:]
        else:
            head, tail = self._head[:head_n], self._tail[-tail_n:]
        omitted = self.total - len(head) - len(tail)
        return f"{decode(head)}\n[... {omitted} bytes omitted ...]\n{decode(tail)}", True


def decode(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def pump(
    proc: subprocess.Popen[bytes], captures: Mapping[IO[bytes] | None, Capture], deadline: float
) -> bool:
    """Read both pipes until EOF and the process exits; True if the deadline passed first."""
    with selectors.DefaultSelector() as sel:
        for stream, capture in captures.items():
            if stream is not None and not stream.closed:
                sel.register(stream, selectors.EVENT_READ, capture)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            for key, _ in sel.select(remaining):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data.feed(chunk)
                else:
                    sel.unregister(key.fileobj)
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
    except subprocess.TimeoutExpired:
        return True
    return False
