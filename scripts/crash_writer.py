"""A memory writer meant to be killed: adds, imports, merges and undoes until SIGKILL.

    python scripts/crash_writer.py STORE SEED [--die-after-commit N] [--chroma-url URL]
                                   [--work DIR]

Opens STORE (hashing embedder), prints READY, then loops over random operations and
prints one line per acknowledged result, flushed, so the parent knows what it may rely on:

    BEGIN <op>                 an operation starts (add, import, merge, undo)
    ADD <lesson id>            Memory.add returned it (SQL committed, index written)
    IMPORT-START <file>        an export file is being imported ...
    IMPORT-DONE <file>         ... and the import returned
    MERGE <merge id>           a consolidation pass returned this merge
    UNDO <merge id>            undo returned

`--die-after-commit N` kills the process with SIGKILL in the memory's after-SQL-commit hook
of the Nth add: the moment between the SQL commit and the index write. Used by
scripts/bench_crash.py and tests/test_crash_consistency.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory import HashEmbedder, Lesson, LessonDraft, LessonMemoryError, Memory
from memory.export import header_line, import_lessons, lesson_line
from retrospectives.consolidate import ConsolidationConfig, consolidate, undo
from retrospectives.errors import ConsolidationBusyError

# Root causes with rewordings, so that consolidation has clusters to merge.
CAUSES = (
    "amount strings carry a dollar currency sign",
    "the csv file starts with a utf-8 byte order mark",
    "timestamps carry a time zone offset",
    "numbers use a decimal comma",
    "the json file holds a trailing comma",
    "the column header has trailing spaces",
)
VARIANTS = ("", " prefix", " in the input", " sometimes", " again")
CONSOLIDATION = ConsolidationConfig(threshold=0.6, lease_ttl_s=1.0)


def draft(rng: random.Random) -> LessonDraft:
    cause = rng.choice(CAUSES) + rng.choice(VARIANTS)
    if rng.random() < 0.7:
        # Words of its own: a new lesson (not folded by dedup), still clustered by cause, so
        # adds keep creating lessons (and reaching the after-commit hook) on a full store.
        n = rng.randrange(10**9)
        cause += f" in module m{n}a m{n}b m{n}c"
    return LessonDraft(
        scope=rng.choice(("demo", "team")),
        error_type="ValueError",
        symptom=f"ValueError: {cause} (case {rng.randrange(10**6)})",
        root_cause=cause,
        fix=f"handle it: {cause.split()[-1]} before parsing",
        applies_when="reading input files",
    )


def say(*words: str) -> None:
    print(*words, flush=True)


def write_export(path: Path, rng: random.Random, count: int) -> None:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    lines = [header_line()]
    for _ in range(count):
        d = draft(rng)
        lesson = Lesson(
            id=f"les_{rng.getrandbits(64):016x}",
            **d.model_dump(include={"scope", "error_type", "symptom", "root_cause", "fix"}),
            created_at=now,
            updated_at=now,
        )
        lines.append(lesson_line(lesson))
    path.write_text("\n".join(lines) + "\n")


def step(memory: Memory, rng: random.Random, work: Path, merges: list[str]) -> None:
    op = rng.choices(("add", "import", "merge", "undo"), weights=(5, 2, 2, 1))[0]
    say("BEGIN", op)
    if op == "add":
        for result in memory.add_many([draft(rng) for _ in range(rng.randint(1, 5))]):
            if result.lesson is not None:
                say("ADD", result.lesson.id)
    elif op == "import":
        path = work / f"import-{rng.getrandbits(32):08x}.jsonl"
        write_export(path, rng, rng.randint(20, 80))
        say("IMPORT-START", str(path))
        with path.open() as lines:
            import_lessons(memory, lines)
        say("IMPORT-DONE", str(path))
    elif op == "merge":
        merges.extend(merge(memory))
    else:
        if not merges:  # something to undo: merge first (a kill may land in either)
            say("BEGIN", "merge")
            merges.extend(merge(memory))
            say("BEGIN", "undo")
        while merges:  # newest first: an older merge may be the base of a newer one
            merge_id = merges.pop()
            try:
                undo(memory, merge_id)
            except LessonMemoryError as exc:  # e.g. a duplicate folded into its canonical
                say("UNDO-REFUSED", merge_id, type(exc).__name__)
                continue
            say("UNDO", merge_id)


def merge(memory: Memory) -> list[str]:
    """One consolidation pass; the ids of its merges (none while a killed pass's lease holds)."""
    try:
        report = consolidate(memory, llm=None, config=CONSOLIDATION)
    except ConsolidationBusyError:
        return []
    for record in report.merges:
        say("MERGE", record.id)
    return [record.id for record in report.merges]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("seed", type=int)
    parser.add_argument("--die-after-commit", type=int, default=0)
    parser.add_argument("--chroma-url", default=None)
    parser.add_argument("--work", default=None, help="where import files go (default: beside)")
    args = parser.parse_args(argv)
    commits = 0

    def after_commit(ids: Sequence[str]) -> None:
        nonlocal commits
        commits += 1
        if commits == args.die_after_commit:
            os.kill(os.getpid(), signal.SIGKILL)

    rng = random.Random(args.seed)
    work = Path(args.work) if args.work else Path(args.store).parent / "imports"
    work.mkdir(exist_ok=True)
    with Memory.open(
        args.store,
        embedder=HashEmbedder(),
        chroma_url=args.chroma_url,
        after_sql_commit=after_commit,
    ) as memory:
        say("READY", json.dumps({"pid": os.getpid()}))
        merges: list[str] = []
        while True:
            step(memory, rng, work, merges)


if __name__ == "__main__":
    main()
