"""One consolidation pass of two code trees on the same set-up store, for a before/after.

    git archive COMMIT | tar -x -C /tmp/before
    python scripts/compare_consolidate.py /tmp/before 10000 --stores DIR   # code before
    python scripts/compare_consolidate.py . 10000 --stores DIR             # this tree

`DIR/store-N` is a store kept by `scripts/bench_consolidate.py --stores DIR` (set up and
embedded once). Prints one JSON line: the full pass (wall and CPU seconds, merges), then
1,000 new paraphrases and the incremental pass. Run the trees back to back: on a shared
machine wall seconds mostly measure the other processes; CPU seconds less so.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path, help="root of the code tree to run")
    parser.add_argument("lessons", type=int)
    parser.add_argument("--stores", type=Path, required=True)
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree), str(tree / "scripts")]  # the tree's packages and bench helpers
    bench = importlib.import_module("bench_consolidate")
    embeddings = importlib.import_module("memory.embeddings")
    store = importlib.import_module("memory.store")
    consolidate = importlib.import_module("retrospectives.consolidate")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "store"
        shutil.copytree(args.stores / f"store-{args.lessons}", work)
        with store.Memory.open(str(work), embedder=embeddings.HashEmbedder(256)) as memory:
            config = consolidate.ConsolidationConfig(threshold=0.6)
            runner = consolidate.Consolidator(memory, llm=None, config=config)
            t, cpu = time.perf_counter(), time.process_time()
            full = runner.run()
            full_s, full_cpu = time.perf_counter() - t, time.process_time() - cpu
            extra = bench.make_lessons(1000, random.Random(args.lessons + 1), start=args.lessons)
            bench.write_lessons(memory, extra)
            memory.embed_root_causes()
            t, cpu = time.perf_counter(), time.process_time()
            incr = runner.run()
            incr_s, incr_cpu = time.perf_counter() - t, time.process_time() - cpu
    print(json.dumps({
        "tree": str(tree), "lessons": args.lessons, "full_s": round(full_s, 2),
        "full_cpu_s": round(full_cpu, 2), "full_merges": len(full.merges),
        "incr_new": len(extra), "incr_s": round(incr_s, 2), "incr_cpu_s": round(incr_cpu, 2),
        "incr_merges": len(incr.merges),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
