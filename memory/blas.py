"""Small matrix products on one BLAS thread.

OpenBLAS splits even a matrix-vector product over every core, and its threads wait for each
other. On a machine whose cores are busy with other work (a local LLM, other processes) that
wait dominates: one draft against 2,000 dedup vectors (384 dims) took 9 ms on OpenBLAS's 2
threads and 0.14 ms on one (2 cores, load 6). The products of the write and recall paths
are that small, so they run on one thread; the caller's own BLAS setting is restored after.
The libraries limited are those loaded at first use, numpy's among them (numpy is imported
before any product runs); one loaded later (scipy's, say) keeps its threads.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

_lock = threading.Lock()
_controller: Any = None  # threadpoolctl's view of the loaded BLAS libraries, found once


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which BLAS (numpy's matrix products) uses one thread."""
    global _controller
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            # Inspecting the loaded libraries costs ~1.5 ms: once per process.
            _controller = ThreadpoolController()
        controller = _controller
    limit: AbstractContextManager[Any] = controller.limit(limits=1, user_api="blas")
    return limit
