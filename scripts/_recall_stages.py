"""The seed stage of scripts/bench_recall.py: the queries a task start sends, and their scores.

Two kinds of seed query, both without error types (the loop has none at task start):
- "error text as seed": each labelled and unrelated error's compressed feedback sent at the
  seed stage, the same text as at reflection minus the error-type gate (how the issue's
  hidden set measures the seed stage);
- "task start": the query the loop builds for a task (`agent.queries.seed_query`: the goal, then the
  first 3 lines of each input file, 300 bytes read; and each file's head alone as a surface
  view), for the labelled cases' `task_goal`s and the unrelated goals.
Each is scored as built (the seed gate at the store's cut, candidates down to the seed cut
margin below it, and a query that states an error gated on the types it states:
memory.seedgate), as built without that stated-type gate (the code before it), and with
`seed_min_similarity` 0.45, 0.50 and 0.55 (`SEED_GATES`), on the odd and the even labelled
(and unrelated) queries. The trap tasks' real
starts, with lessons a retrospective wrote, are in scripts/_recall_traps.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent.task import preview_bytes

PREVIEW_BYTES, PREVIEW_LINES = 300, 3


def seed_parts(
    goal: str, files: Mapping[str, str], encodings: Mapping[str, str]
) -> tuple[str, tuple[str, ...]]:
    """What `agent.queries.seed_query` makes of a task with these workspace files: the text
    (goal + input heads) and the surface views (each head)."""
    heads = []
    for name in sorted(files):
        raw = files[name].encode(encodings.get(name, "utf-8"))
        preview = preview_bytes(raw[:PREVIEW_BYTES], cut=len(raw) > PREVIEW_BYTES)
        heads.append(f"--- {name} ---\n" + "\n".join(preview.splitlines()[:PREVIEW_LINES]))
    return "\n".join([goal, *heads]), tuple(heads)


def as_seed(query: Any, query_type: type[Any]) -> Any:
    """A reflection query's text sent at the seed stage: no error types."""
    return query_type(id=f"{query.id}@seed", target=query.target, text=query.text,
                      error_types=(), stage="seed", kind="error text as seed")  # fmt: skip


def seed_views(
    related: Sequence[Any], unrelated: Sequence[Any], task_starts: Sequence[Any], query_type: type
) -> dict[str, tuple[list[Any], list[Any]]]:
    """{view name: (labelled queries, unrelated queries)} of the seed stage."""
    errors = [as_seed(q, query_type) for q in related]
    unrelated_errors = [as_seed(q, query_type) for q in unrelated if q.stage == "reflection"]
    goals = [q for q in unrelated if q.stage == "seed"]
    return {
        "seed stage, error text": (errors, unrelated_errors + goals),
        "seed stage, task start": (list(task_starts), goals),
    }


# The seed gates compared (None: the store's cut, memory.recall.seed_gate): 0.55 is what
# error texts alone need; 0.45 and 0.50 show the trade between the two on every run.
SEED_GATES = (None, 0.45, 0.50, 0.55)


def gated(memory: Any, gate: float | None, run: Callable[[], Any], *, stated: bool = True) -> Any:
    """Run with `seed_min_similarity` at `gate` (None: the store's cut) and the stated-type
    gate on or off (`seed_stated_types`, memory.seedgate), then restore the config."""
    config = memory.recall_config
    memory.recall_config = dataclasses.replace(
        config, seed_min_similarity=gate, seed_stated_types=stated
    )
    try:
        return run()
    finally:
        memory.recall_config = config
