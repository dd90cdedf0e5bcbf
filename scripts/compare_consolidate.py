"""One consolidation pass of two code trees on the same set-up store, for a before/after.

    git archive COMMIT | tar -x -C /tmp/before
    python scripts/compare_consolidate.py /tmp/before 10000 --stores DIR   # code before
    python scripts/compare_consolidate.py . 10000 --stores DIR             # this tree

`DIR/store-N` is a store kept by `scripts/bench_consolidate.py --stores DIR` (set up and
embedded once). Prints one JSON line: the full pass (wall and CPU seconds, merges, the load
average before and after), then 1,000 new paraphrases and the incremental pass. Run the
trees back to back: on a shared machine wall seconds mostly measure the other processes;
CPU seconds less so. `--merges FILE` writes what the full pass merged (each merge's lessons
and its canonical's text, sorted), so two trees' outputs can be compared with `cmp`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path, help="root of the code tree to run")
    parser.add_argument("lessons", type=int)
    parser.add_argument("--stores", type=Path, required=True)
    parser.add_argument("--merges", type=Path, default=None, help="write the merges here")
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
            load = os.getloadavg()[0]
            t, cpu = time.perf_counter(), time.process_time()
            full = runner.run()
            full_s, full_cpu = time.perf_counter() - t, time.process_time() - cpu
            load_after = os.getloadavg()[0]
            if args.merges is not None:
                args.merges.write_text(merged(memory, full.merges))
            extra = bench.make_lessons(1000, random.Random(args.lessons + 1), start=args.lessons)
            bench.write_lessons(memory, extra)
            memory.embed_root_causes()
            t, cpu = time.perf_counter(), time.process_time()
            incr = runner.run()
            incr_s, incr_cpu = time.perf_counter() - t, time.process_time() - cpu
    print(json.dumps({
        "tree": str(tree), "lessons": args.lessons, "full_s": round(full_s, 2),
        "full_cpu_s": round(full_cpu, 2), "full_merges": len(full.merges),
        "load_before": round(load, 1), "load_after": round(load_after, 1),
        "incr_new": len(extra), "incr_s": round(incr_s, 2), "incr_cpu_s": round(incr_cpu, 2),
        "incr_merges": len(incr.merges),
    }))  # fmt: skip


def merged(memory: Any, merges: Any) -> str:
    """One JSON line per merge, sorted: its lessons (a new canonical's id is random, so the
    lessons stand for it) and the canonical's text."""
    lines = []
    for record in merges:
        canonical = memory.get(record.canonical_id)
        lessons = sorted(record.member_ids)
        if not record.created_canonical:
            lessons.append(f"into:{record.canonical_id}")
        text = [canonical.symptom, canonical.root_cause, canonical.fix, canonical.applies_when]
        lines.append(json.dumps([lessons, text, canonical.status, canonical.seen]))
    return "\n".join(sorted(lines)) + "\n"


if __name__ == "__main__":
    main()
