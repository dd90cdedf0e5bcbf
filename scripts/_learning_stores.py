"""The stores of a learning bench (`bench_learning.py`): the frozen condition's read-only
view and its snapshot, the lessons exported for the post-mortem, and what an interrupted
bench kept, to resume from."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory import Embedder, LessonFilter, Memory
from memory.types import LessonQuery, RecallStage, ScoredLesson
from scripts._benchlib import LearningResults


class FrozenRecall:
    """A read-only view of a store: recall works; uses are not recorded, counters stay put."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def recall(self, query: LessonQuery) -> Sequence[ScoredLesson]:
        return self.memory.recall(query)

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        return None


def snapshot(src: Path, dst: Path, embedder: Embedder) -> Memory:
    """A copy of the store at `src` as a new store at `dst` (SQL copied, index rebuilt),
    made beside it and renamed into place when whole: a bench killed while copying leaves
    no half store for `--resume` to open."""
    partial = dst.with_name(dst.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    db = partial / "memory.sqlite3"
    with sqlite3.connect(src / "memory.sqlite3") as a, sqlite3.connect(db) as b:
        a.backup(b)  # consistent even while the source store holds the file open
    with Memory.open(str(partial), embedder=embedder) as copy:
        copy.reindex()
    partial.rename(dst)
    return Memory.open(str(dst), embedder=embedder)


def export_lessons(stores: dict[str, Memory]) -> dict[str, list[dict[str, Any]]]:
    """Every stored lesson with its counters, per learning store (for the post-mortem)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, memory in stores.items():
        if name.startswith("learning"):
            lessons: list[dict[str, Any]] = []
            while True:  # every page: the audit must see every lesson
                page = memory.list_lessons(
                    LessonFilter(
                        offset=len(lessons), limit=1000, sort="created_at", descending=False
                    )
                )
                lessons += [lesson.model_dump(mode="json") for lesson in page.items]
                if not page.items or len(lessons) >= page.total:
                    break
            out[name] = lessons
    return out


def resumed(
    fresh: LearningResults, path: Path, store_dir: Path | None, runs_dir: Path
) -> LearningResults:
    """The results an interrupted bench kept at `path`, to go on from: its records and
    start, this run's plan. SystemExit when there are none, when they were made with another
    config or task selection, when learning records exist but their store was not kept, or
    when a run without memory that later positions reuse left no trajectory in `runs_dir`."""
    if not path.is_file():
        raise SystemExit(f"--resume: no {path} to go on from")
    kept = LearningResults.model_validate_json(path.read_text())
    if kept.config != fresh.config:
        differ = sorted(k for k in {**kept.config, **fresh.config}
                        if kept.config.get(k) != fresh.config.get(k))  # fmt: skip
        raise SystemExit(f"--resume: {path} was run with other settings: {', '.join(differ)}")
    if kept.tasks != fresh.tasks or kept.orders != fresh.orders:
        raise SystemExit(f"--resume: {path} was run on other tasks or orders")
    learned = any(r.condition != "none" for r in kept.records)
    if learned and (store_dir is None or not store_dir.is_dir()):
        raise SystemExit(f"--resume: the stores of {path} were not kept (run with --keep-stores)")
    lost = [f"none-{r.seed}-{r.task_id}.json" for r in kept.records
            if r.condition == "none" and not r.reused
            and not (runs_dir / f"none-{r.seed}-{r.task_id}.json").is_file()]  # fmt: skip
    if lost:
        raise SystemExit(f"--resume: {runs_dir} lacks {', '.join(lost)}, which later runs reuse")
    return fresh.model_copy(
        update={"records": list(kept.records), "started": kept.started,
                "resumed": [*kept.resumed, (kept.finished, fresh.started)]}
    )  # fmt: skip
