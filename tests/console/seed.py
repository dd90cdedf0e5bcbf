"""A real store for the console tests: SQLite + embedded chromadb, hashing embedder.

Seeded with a run made by the real loop (`python -m agent run` with the scripted model, real
sandbox, so the run directory holds a real trajectory.json and the run wrote a lesson),
curated lessons (one to approve, one to deprecate, one carrying an XSS payload, one flagged
for review) and a consolidation merge of three lessons that share a root cause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from memory import LessonDraft, Memory
from memory.embeddings import resolve_embedder
from retrospectives.consolidate import ConsolidationConfig, consolidate
from tests.helpers import GEN, REFINE, code, fix
from tests.test_cli_run import ANALYSIS, BOM_CRASH, BOM_GOOD, LESSON, make_bom_task

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
CURRENCY = (
    ("amount strings carry a dollar currency sign", "strip the dollar sign before float"),
    ("amount strings carry a dollar currency sign prefix", "strip the dollar sign before float"),
    ("the amount strings carry a dollar currency sign", "use Decimal after removing the sign"),
)


ODD_SYMPTOM = "\nKeyError: 'date' after reading events.json"  # a leading newline
ODD_ROOT_CAUSE = "the field is named 'ts'\r\nnot 'date'\rsee events.json"  # CRLF, a lone CR


class Seeded(BaseModel):
    """What the seeded store holds, by role."""

    model_config = ConfigDict(frozen=True)

    home: Path
    store: Path
    results: Path
    run_id: str
    run_lesson: str  # written by the run's retrospective
    to_approve: str
    to_deprecate: str
    xss: str
    flagged: str
    merge_id: str
    merged: tuple[str, ...]
    canonical: str


def env_for(home: Path) -> dict[str, str]:
    """The environment every process of a test uses: its own home, the hashing embedder."""
    return {**os.environ, "LESSONLOOP_HOME": str(home), "LESSONLOOP_EMBEDDER": "hash"}


def open_store(store: Path, **options: float) -> Memory:
    """The store as the CLI opens it with LESSONLOOP_EMBEDDER=hash."""
    return Memory.open(str(store), embedder=resolve_embedder("hash"), **options)


def _real_run(root: Path, home: Path, store: Path) -> tuple[str, str]:
    task = make_bom_task(root / "bom_task")
    replies = root / "replies.json"
    replies.write_text(
        json.dumps(
            {GEN: [code(BOM_CRASH)], REFINE: [fix(BOM_GOOD, "utf-8-sig")], LESSON: [ANALYSIS]}
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "run", str(task), "--model", f"scripted:{replies}"]
        + ["--memory", str(store), "--json"],
        capture_output=True,
        text=True,
        env={**env_for(home), "LESSONLOOP_POOL_SIZE": "1", "LESSONLOOP_FIRST_POOL": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    return data["run_id"], data["lessons_written"][0]["id"]


def _draft(
    symptom: str, root: str, fix_: str, scope: str = "demo", kind: str = "ValueError"
) -> LessonDraft:
    return LessonDraft(scope=scope, error_type=kind, symptom=symptom, root_cause=root, fix=fix_)


def _learning_results(root: Path) -> Path:
    from tests.test_report import write_learning_results

    write_learning_results(root / "learning-1")
    return root


def build(root: Path) -> Seeded:
    """Make the store under `root` (a run first: the embedded index is one process's)."""
    home, store = root / "home", root / "home" / "memory"
    run_id, run_lesson = _real_run(root, home, store)
    # Write-time dedup off: the merge needs three near-identical lessons.
    with open_store(store, dedup_similarity=1.01) as memory:
        added = memory.add_many(
            [
                _draft(
                    # Text a form shows otherwise than it is stored: an edit of another
                    # field must leave it as it was (tests/console/test_console_browser.py).
                    ODD_SYMPTOM,
                    ODD_ROOT_CAUSE,
                    "read 'ts'",
                    "ops",
                    "KeyError",
                ),
                _draft(
                    "TimeoutError fetching rates",
                    "no network in the sandbox",
                    "read rates.csv",
                    "ops",
                    "TimeoutError",
                ),
                _draft(f"{XSS} ValueError in report", f"model output {XSS}", f"fix {XSS}", "ops"),
                _draft(
                    "RecursionError in flatten",
                    "strings are iterable",
                    "treat str as an atom",
                    "ops",
                    "RecursionError",
                ),
                *[_draft(f"ValueError: {r}", r, f) for r, f in CURRENCY],
            ]
        )
        ids = [a.lesson.id for a in added if a.lesson is not None]
        memory.flag_for_review(ids[3], "recalled into 3 failing runs, 0 passing")
        report = consolidate(memory, llm=None, config=ConsolidationConfig(threshold=0.6))
    (merge,) = report.merges
    return Seeded(
        home=home,
        store=store,
        results=_learning_results(root / "bench-results"),
        run_id=run_id,
        run_lesson=run_lesson,
        to_approve=ids[0],
        to_deprecate=ids[1],
        xss=ids[2],
        flagged=ids[3],
        merge_id=merge.id,
        merged=tuple(ids[4:]),
        canonical=merge.canonical_id,
    )
