"""Writer processes and a consolidation pass at once on PostgreSQL + a Chroma server.

`python scripts/bench_concurrency.py` runs 8 writers x 100 lessons; this runs 4 x 25 with
the same checks: nothing lost, exact duplicates stored once (seen = writers), every add
counted once, every merge undoable, SQL and the index in agreement.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_servers import SERVER_MARKS, make_spec

from scripts.bench_concurrency import run


@pytest.mark.parametrize("kind", [pytest.param("postgres", marks=SERVER_MARKS)])
def test_writers_and_consolidation_at_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    report = run(make_spec(kind, request, tmp_path), writers=4, per_writer=25, root=tmp_path)
    assert report.merges > 0  # consolidation really ran alongside the writers
    assert report.lost == 0 and report.duplicated == 0
    assert report.seen_sum_after_writes == report.adds == report.seen_sum_after_undo
    assert report.undo_failures == () and report.merged_after_undo == 0
    assert report.index_clean
