"""One bulk load of a code tree, for a before/after: speed, and the stored data to compare.

    git archive COMMIT | tar -x -C /tmp/before
    python scripts/compare_bulk.py /tmp/before 10000 --dump before.txt   # code before
    python scripts/compare_bulk.py . 10000 --dump after.txt              # this tree
    cmp before.txt after.txt

Loads N synthetic lessons (`scripts/_synthetic_lessons.py`, 20 scopes, 5 % global; vectors
from `scripts/_table_vectors.py`, so no embedding is timed) with `Memory.add_many` in
batches (dedup and redaction on), as `scripts/bench_memory.py` does, into a fresh embedded
store. Prints one JSON line: wall and process CPU seconds of the load, lessons per second of
each, the load average. `--dump FILE` writes what the store holds, sorted, without what is
random or a clock (ids, timestamps): every lesson's fields, a hash of its dedup vector, the
index entries' metadata without "status" (the index stopped holding it), and `check`'s
verdict. Run the trees back to back: on a shared machine the CPU figure is the one to
compare.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path, help="root of the code tree to run")
    parser.add_argument("lessons", type=int)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--dump", type=Path, default=None, help="write the stored data here")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "lessonloop-bench"
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree)]  # the tree's packages and bench helpers
    memory = importlib.import_module("memory")
    lessons = importlib.import_module("scripts._synthetic_lessons")
    vectors = importlib.import_module("scripts._table_vectors")
    n = args.lessons
    drafts = lessons.generate(n, seed=7 + n, scopes=lessons.SCOPES, global_share=0.05)
    queries = lessons.bench_queries(10, pool=1000, seed=7)
    minilm = memory.MiniLMEmbedder(batch_size=128)  # only if the pool is not cached
    table = vectors.build_table(
        drafts, queries, minilm, seed=7, pool_size=1000, cache=args.cache, exact=False
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = memory.Memory.open(
            tmp, embedder=vectors.TableEmbedder(table), dedup_similarity=0.999
        )
        with store:
            load = os.getloadavg()[0]
            t, cpu = time.perf_counter(), time.process_time()
            for start in range(0, n, args.batch):
                store.add_many(drafts[start : start + args.batch])
            wall, used = time.perf_counter() - t, time.process_time() - cpu
            if args.dump is not None:
                args.dump.write_text(dump(store))
    print(json.dumps({
        "tree": str(tree), "lessons": n, "batch": args.batch, "wall_s": round(wall, 2),
        "cpu_s": round(used, 2), "per_s": round(n / wall, 1), "per_cpu_s": round(n / used, 1),
        "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
    }))  # fmt: skip


def dump(store: Any) -> str:
    """The store's lessons, dedup vectors and index entries, sorted, without ids or clocks."""
    from sqlmodel import select

    from memory.schema import LessonRow
    from memory.types import LessonFilter

    lines: list[str] = []
    offset, total = 0, 1
    while offset < total:
        page = store.list_lessons(LessonFilter(limit=500, offset=offset))
        total, offset = page.total, offset + 500
        for lesson in page.items:
            fields = lesson.model_dump(mode="json", exclude={"id", "created_at", "updated_at"})
            lines.append(json.dumps(fields, sort_keys=True))
    with store._db.read() as session:
        rows = session.execute(
            select(LessonRow.symptom, LessonRow.root_cause, LessonRow.fix, LessonRow.dedup_vector)
        )
        lines += [
            json.dumps([s, r, f, hashlib.sha1(v).hexdigest()]) for s, r, f, v in rows
        ]  # fmt: skip
    lines += [
        json.dumps({k: v for k, v in meta.items() if k != "status"}, sort_keys=True)
        for _, meta in store._index.entries()
    ]
    return "\n".join(sorted(lines)) + f"\ncheck clean: {store.check().clean}\n"


if __name__ == "__main__":
    main()
