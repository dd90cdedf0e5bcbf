"""Cosine distributions of scripts/bench_recall.py's reflection stage: where the cut could sit.

For each labelled error query: the cosine of the lesson that fixes it ("target") and the best
cosine of any other lesson ("best wrong": what outranks or joins it). For each unrelated
error query: the best cosine among the lessons of its error types, which is what opens the
reflection gate (`memory.recall`: answer only if a lesson of the query's types passes the
cut). Then, for a grid of cuts, the share of labelled queries whose target passes and the
share of unrelated queries the cut silences, on the odd and the even labelled queries.

Both texts are measured: "matched" (what recall compares: `memory.matchtext` on the query and
`memory.dedup.index_text` on the lesson) and "as written" (index text version 1: symptom +
root cause and the query as they are), so one run shows what the change did to the scale.

    python scripts/_recall_cosines.py bench-results/bench_recall-....json   # from its queries
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory import Embedder, MiniLMEmbedder
from memory.dedup import index_text
from memory.matchtext import match_text

Text = Literal["matched", "as written"]
CUTS = (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60)
QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


class CutRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    cut: float
    target_passes: tuple[float, float]  # odd, even labelled queries
    unrelated_silenced: float


class CosineReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: Text
    # Quantiles (min, p10, p25, median, p75, p90, max) of each distribution.
    target: tuple[float, ...]
    best_wrong: tuple[float, ...]
    unrelated_gate: tuple[float, ...]
    cuts: tuple[CutRow, ...]


def _quantiles(values: Sequence[float]) -> tuple[float, ...]:
    if not values:
        return ()
    return tuple(round(float(np.quantile(values, q)), 3) for q in QUANTILES)


def cosine_report(
    embedder: Embedder, lessons: Sequence[Any], queries: Sequence[Any], text: Text
) -> CosineReport:
    """The distributions of the module docstring. `lessons` have id, error_type, symptom and
    root_cause; `queries` id, target, text, error_types and stage."""
    asked = [q for q in queries if q.stage == "reflection"]
    if text == "matched":
        docs = [index_text(x.symptom, x.root_cause) for x in lessons]
        texts = [match_text(q.text) for q in asked]
    else:
        docs = [f"{x.symptom}\n{x.root_cause}" for x in lessons]
        texts = [q.text for q in asked]
    sims = np.asarray(embedder.embed(texts)) @ np.asarray(embedder.embed(docs)).T
    ids = [x.id for x in lessons]
    target: list[float] = []
    wrong: list[float] = []
    gate: list[float] = []
    for q, row in zip(asked, sims, strict=True):
        if q.target:
            target.append(float(row[ids.index(q.target)]))
            wrong.append(max(float(s) for i, s in zip(ids, row, strict=True) if i != q.target))
        else:
            typed = [float(s) for x, s in zip(lessons, row, strict=True)
                     if x.error_type in q.error_types]  # fmt: skip
            gate.append(max(typed, default=-1.0))
    halves = (target[0::2], target[1::2])
    cuts = tuple(
        CutRow(
            cut=cut,
            target_passes=tuple(
                round(sum(t >= cut for t in h) / max(1, len(h)), 3) for h in halves
            ),
            unrelated_silenced=round(sum(g < cut for g in gate) / max(1, len(gate)), 3),
        )
        for cut in CUTS
    )
    return CosineReport(text=text, target=_quantiles(target), best_wrong=_quantiles(wrong),
                        unrelated_gate=_quantiles(gate), cuts=cuts)  # fmt: skip


def print_cosines(reports: Sequence[CosineReport], console: Console) -> None:
    table = Table(title="Reflection-stage cosines (min/p10/p25/median/p75/p90/max)")
    for column in ("text", "target lesson", "best wrong lesson", "unrelated: best of its types"):
        table.add_column(column)
    for r in reports:
        table.add_row(r.text, *(" ".join(f"{v:.2f}" for v in d)
                                for d in (r.target, r.best_wrong, r.unrelated_gate)))  # fmt: skip
    console.print(table)
    sweep = Table(title="Cut sweep: target passes (odd | even labelled) / unrelated silenced")
    sweep.add_column("cut")
    for r in reports:
        sweep.add_column(r.text)
    for i, cut in enumerate(CUTS):
        cells = [f"{r.cuts[i].target_passes[0]:.2f} | {r.cuts[i].target_passes[1]:.2f} / "
                 f"{r.cuts[i].unrelated_silenced:.2f}" for r in reports]  # fmt: skip
        sweep.add_row(f"{cut:.2f}", *cells)
    console.print(sweep)


def main(argv: Sequence[str] | None = None) -> int:
    from scripts._recall_suite import SUITE, Query, load_suite

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", type=Path, help="a bench_recall JSON (its queries are used)")
    parser.add_argument("--suite", type=Path, default=SUITE)
    args = parser.parse_args(argv)
    queries = [Query(**q) for q in json.loads(args.report.read_text())["queries"]]
    lessons = load_suite(args.suite).lessons
    embedder = MiniLMEmbedder()
    texts: tuple[Text, ...] = ("as written", "matched")
    print_cosines([cosine_report(embedder, lessons, queries, t) for t in texts], Console())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
