"""Generate the trap suite: data files, expected values, checkers and reference solutions.

Each trap task hides one dirty-data root cause (its family: currency strings, decimal
commas, BOMs, ...) behind a plain goal that says only what to compute. Tasks of one family
share the root cause under different surface forms and domains, so a lesson learned on one
should transfer to the others.

Ground truth comes first: values are drawn as clean numbers / dates / booleans, expected.json
is computed from them, and only then rendered into the dirty surface form of the data file.
The reference solution therefore proves two things when it passes: the task is solvable, and
the dirty rendering still carries the clean values.

Every reference solution has one block between the markers

    # --- trap helpers: <family> ---
    # --- end trap helpers ---

holding the family's careful parsing helpers, copied from _robust/<family>.py. _naive/<family>.py
holds the obvious version of the same helpers; tests/test_examples.py swaps it in and checks
that the result fails.

Layout: _kit.py (model, writers, templates), _families/<family>.py (the tasks of one family),
_robust/ and _naive/ (helpers), _checker.py (copied into every task as check.py).

Deterministic: each task seeds its own Random with its name.
Run:  python examples/traps/_generate.py [OUT_DIR]     (default: this directory)
"""

from __future__ import annotations

import importlib
import json
import random
import re
import shutil
import sys
from pathlib import Path

from _kit import BUILDERS, FAMILY_ORDER, HERE, Trap, render_solution, render_toml

for _family in FAMILY_ORDER:  # each family module registers its builders with @trap
    importlib.import_module(f"_families.{_family}")


def build_all() -> list[Trap]:
    traps = [builder(random.Random(builder.__name__)) for builder in BUILDERS]
    traps.sort(key=lambda t: (FAMILY_ORDER.index(t.family), t.nn))
    names = [t.name for t in traps]
    assert len(set(names)) == len(names), "duplicate trap names"
    return traps


def write(out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    traps = build_all()
    pattern = re.compile(rf"^({'|'.join(FAMILY_ORDER)})_\d\d_\w+$")
    current = {t.name for t in traps}
    for stale in out.iterdir():  # drop tasks a previous run produced but this one does not
        if stale.is_dir() and pattern.match(stale.name) and stale.name not in current:
            shutil.rmtree(stale)
    checker = (HERE / "_checker.py").read_bytes()
    for t in traps:
        task_dir = out / t.name
        if task_dir.exists():
            shutil.rmtree(task_dir)
        (task_dir / "workspace").mkdir(parents=True)
        (task_dir / "reference").mkdir()
        for name, data in t.files.items():
            (task_dir / "workspace" / name).write_bytes(data)
        (task_dir / "task.toml").write_text(render_toml(t), encoding="utf-8")
        (task_dir / "expected.json").write_text(
            json.dumps(t.expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (task_dir / "check.py").write_bytes(checker)
        (task_dir / "reference" / "solution.py").write_text(render_solution(t), encoding="utf-8")
    return [t.name for t in traps]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    names = write(target)
    print(f"wrote {len(names)} trap tasks to {target}")
