"""One consolidation pass in its own OS process, started in step with others through files.

    python -m tests.retro.race_worker STORE BARRIER_DIR NAME PARTIES

Opens the store (hashing embedder) and builds its consolidator first, then writes
BARRIER_DIR/NAME.ready and waits until PARTIES ready files exist, so every process starts
its pass at the same moment instead of whenever its imports happen to finish. Prints one
JSON object: the outcome ("ran" or "busy") and the merge ids of its pass.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memory.embeddings import HashEmbedder
from memory.store import Memory
from retrospectives.consolidate import ConsolidationConfig, Consolidator
from retrospectives.errors import ConsolidationBusyError

CONFIG = ConsolidationConfig(threshold=0.6)
BARRIER_TIMEOUT_S = 120.0


def wait_for_parties(barrier: Path, name: str, parties: int) -> None:
    (barrier / f"{name}.ready").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while len(list(barrier.glob("*.ready"))) < parties:
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: the other processes never became ready")
        time.sleep(0.005)


def main(store: str, barrier: str, name: str, parties: str) -> None:
    with Memory.open(store, embedder=HashEmbedder()) as memory:
        consolidator = Consolidator(memory, llm=None, config=CONFIG, holder=name)
        wait_for_parties(Path(barrier), name, int(parties))
        started = time.time()
        try:
            merges = [m.id for m in consolidator.run().merges]
            outcome = "ran"
        except ConsolidationBusyError:
            merges, outcome = [], "busy"
        finished = time.time()
    result: dict[str, object] = {"name": name, "outcome": outcome, "merges": merges}
    result |= {"started": started, "finished": finished}
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
