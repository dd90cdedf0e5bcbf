"""The store-side trigger through `lessonloop run`: LESSONLOOP_CONSOLIDATE_EVERY=N starts a
pass once N lessons wait for one, counted in the store, so separate processes add up.

Real task dirs, real sandbox, real SQLite + chromadb files, the hashing embedder
(LESSONLOOP_EMBEDDER=hash) and the scripted model; every run is its own OS process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory.embeddings import HashEmbedder
from memory.store import Memory
from memory.types import LessonDraft
from tests.helpers import CRASH, GEN, GOOD, REFINE, code, fix
from tests.retro.builders import MERGE_SYS
from tests.retro.test_consolidate import CURRENCY
from tests.test_cli_run import ANALYSIS, BOM_CRASH, BOM_GOOD, LESSON, make_bom_task, make_task_dir

CANONICAL = json.dumps(
    {
        "symptom": "ValueError: could not convert an amount string to float",
        "root_cause": "amount strings carry a dollar currency sign",
        "fix": "strip the dollar sign before float",
        "applies_when": "converting money columns with float()",
    }
)
SECOND_ANALYSIS = json.dumps(
    {
        "root_cause": "the program looked up a key that the empty dict never had",
        "fix": "compute 6 * 7 directly and write it to out.json",
        "applies_when": "writing a computed number as JSON",
    }
)


def seed(path: Path) -> None:
    """Two near-duplicate lessons in the runs' scope, written by this (another) process."""
    drafts = [
        LessonDraft(
            scope="cli-test",
            error_type="ValueError",
            symptom=f"ValueError: {root}",
            root_cause=root,
            fix=fix_text,
            applies_when="converting money columns with float()",
        )
        for root, fix_text in CURRENCY[:2]
    ]
    with Memory.open(str(path), embedder=HashEmbedder(), dedup_similarity=1.01) as memory:
        assert [a.action for a in memory.add_many(drafts)] == ["created", "created"]


def run(tmp: Path, task: Path, store: Path, replies: object, **env: str) -> dict[str, Any]:
    script = tmp / f"replies-{len(list(tmp.glob('replies-*')))}.json"
    script.write_text(json.dumps(replies))
    environ = {k: v for k, v in os.environ.items() if k != "LESSONLOOP_CONSOLIDATE_EVERY"}
    # One candidate in round 1: the scripted replies are written draw by draw.
    environ |= {"LESSONLOOP_HOME": str(tmp / "home"), "LESSONLOOP_EMBEDDER": "hash"}
    environ |= {"LESSONLOOP_FIRST_POOL": "1", **env}
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "run", str(task), "--memory", str(store)]
        + ["--model", f"scripted:{script}", "--json"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def waiting(store: Path) -> tuple[int, int]:
    """(lessons no pass has processed, merge records) as the store holds them."""
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        return memory.unprocessed_count(), len(memory.list_merges())


def test_run_starts_a_pass_once_n_lessons_wait_across_processes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    seed(store)
    bom = make_bom_task(tmp_path / "bom")
    answer = make_task_dir(tmp_path / "answer")

    # Trigger off (unset): a third waiting lesson, no pass.
    first = run(
        tmp_path,
        bom,
        store,
        {GEN: [code(BOM_CRASH)], REFINE: [fix(BOM_GOOD, "utf-8-sig")], LESSON: [ANALYSIS]},
    )
    assert [w["action"] for w in first["lessons_written"]] == ["created"]
    assert first["consolidation"] is None
    assert waiting(store) == (3, 0)

    # Every 5: a fourth waiting lesson, still below the threshold.
    second = run(
        tmp_path,
        answer,
        store,
        {GEN: [code(CRASH)], REFINE: [fix(GOOD)], LESSON: [SECOND_ANALYSIS]},
        LESSONLOOP_CONSOLIDATE_EVERY="5",
    )
    assert [w["action"] for w in second["lessons_written"]] == ["created"]
    assert second["consolidation"] is None
    assert waiting(store) == (4, 0)

    # Every 4: this run writes no lesson (it passes at once with the recalled one), yet the
    # four lessons written by earlier processes are due, so it runs the pass.
    third = run(
        tmp_path,
        bom,
        store,
        {GEN: [code(BOM_GOOD)], MERGE_SYS: [CANONICAL]},
        LESSONLOOP_CONSOLIDATE_EVERY="4",
    )
    assert third["lessons_written"] == [] and third["rounds"] == 1
    assert third["consolidation"] is not None
    assert third["consolidation"]["new_lessons"] == 4
    assert len(third["consolidation"]["merges"]) == 1
    assert third["consolidation"]["usage"]["calls"] == 1  # the merge's canonical text
    assert waiting(store) == (0, 1)
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        (merge,) = memory.list_merges()
        assert merge.id == third["consolidation"]["merges"][0]
        assert merge.written_by == "model"  # the run's model wrote the canonical
        members = [memory.get(i) for i in merge.member_ids]
        assert sorted(m.root_cause for m in members) == sorted(r for r, _ in CURRENCY[:2])
        assert {m.status for m in members} == {"merged"}
