"""What chromadb charges per entry: a metadata-only update against a delete, with and
without stored documents (the question: may merged lessons leave the index instead?), and
an update whose batches are sorted by id (what `memory.merge_write` sent until the index
stopped holding status: merges now write nothing for their members, `memory/index.py`).

    python scripts/bench_chroma_ops.py --entries 20000 --touched 10000

A fresh embedded collection per case, filled with lesson-like entries (256-dim vectors,
metadata as `memory.index` wrote it, status included; documents of ten words when asked),
then `touched` random entries updated (status "merged"; "update-sorted": each batch sorted by id) or
deleted in as few calls as the client takes.
Prints wall and process CPU seconds per case and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.index import (  # noqa: E402
    _refusing_embedding_function,
    embedded_client,
    lesson_metadata,
)

WORDS = ["amount", "currency", "header", "bom", "encoding", "comma", "decimal", "json", "quote"]


def _with_status(error_type: str, status: str) -> dict[str, str]:
    # As entries were written when the index held status (a metadata-only update to time).
    return {**lesson_metadata("s", error_type, "hash"), "status": status}


def case(root: Path, op: str, documents: bool, entries: int, touched: int) -> dict[str, object]:
    client = embedded_client(root / f"{op}-{documents}")
    batch = int(client.get_max_batch_size())
    collection = client.create_collection(
        f"bench-{op}",
        metadata={"hnsw:space": "cosine"},
        embedding_function=_refusing_embedding_function(),  # vectors are ours
    )
    rng, pick = np.random.default_rng(0), random.Random(0)
    ids = [f"les_{i:08d}" for i in range(entries)]
    for start in range(0, entries, batch):
        chunk = ids[start : start + batch]
        docs = [" ".join(pick.choices(WORDS, k=10)) for _ in chunk] if documents else None
        collection.add(
            ids=chunk,
            embeddings=rng.standard_normal((len(chunk), 256)).astype(np.float32),
            metadatas=[_with_status("E1", "candidate") for _ in chunk],
            documents=docs,
        )  # fmt: skip
    chosen = pick.sample(ids, touched)
    merged = _with_status("E", "merged")
    t, cpu = time.perf_counter(), time.process_time()
    for start in range(0, touched, batch):
        chunk = chosen[start : start + batch]
        if op == "update-sorted":
            chunk = sorted(chunk)
        if op.startswith("update"):
            collection.update(ids=chunk, metadatas=[dict(merged) for _ in chunk])
        else:
            collection.delete(ids=chunk)
    wall, used = time.perf_counter() - t, time.process_time() - cpu
    return {"op": op, "documents": documents, "wall_s": round(wall, 2), "cpu_s": round(used, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--touched", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("bench-results/chroma_ops.json"))
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for documents in (True, False):
            for op in ("update", "update-sorted", "delete"):
                row = case(Path(tmp), op, documents, args.entries, args.touched)
                print(json.dumps(row))
                results.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"entries": args.entries, "touched": args.touched, "results": results}, indent=2)
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
