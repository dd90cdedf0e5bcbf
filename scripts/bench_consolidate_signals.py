"""Which pair signal moves consolidation's duplicate rate without a model: ablation rows.

    python scripts/bench_consolidate_signals.py                 # MiniLM, both labelled sets
    python scripts/bench_consolidate_signals.py --embedder hash --out /tmp/s.json

The labelled sets and halves of scripts/bench_consolidate_quality.py (the hand-written
cross-type set and the paraphrase set, odd and even root-cause groups). Each variant is a
weighted sum of pair signals (scripts/_pair_signals.py), clustered by the pass's average
linkage; its threshold is fitted on one half (the lowest cross-type duplicate rate, plus a
quarter of the paraphrase set's, with purity >= 0.96 on the cross-type set and >= 0.97 on
the paraphrase set; ties go to the higher threshold) and reported on the other half, both
directions. The variants were fixed before any was measured; no weight was searched.
"ceiling" is the lowest duplicate rate any threshold reaches on the reported half itself at
purity >= 0.95 (what a threshold known in advance could do, not a result).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from memory import Embedder, HashEmbedder, MiniLMEmbedder
from scripts import _pair_signals as sig
from scripts._benchlib import REPO, write_json_atomic
from scripts.bench_consolidate_quality import Labelled, cross_types, halves, paraphrases

Half = Literal["odd", "even"]
SetName = Literal["cross_types", "paraphrase"]
# The pass today (retrospectives.link defaults) and one change each.
VARIANTS: dict[str, dict[str, float]] = {
    "today: root-cause cosine + words": {"root": 0.4, "words": 0.6},
    "+ fix cosine": {"root": 0.2, "fix": 0.2, "words": 0.6},
    "fix cosine instead of root cause": {"fix": 0.4, "words": 0.6},
    "cosine of root cause + fix text": {"both": 0.4, "words": 0.6},
    "+ signature overlap (0.15)": {"root": 0.34, "words": 0.51, "signature": 0.15},
    "words + signature tokens": {"root": 0.4, "words_signature": 0.6},
    "normalised text (names, values out)": {"root_normalised": 0.4, "words_normalised": 0.6},
    "soft word overlap (word vectors >= 0.7)": {"root": 0.4, "soft": 0.6},
}
TODAY = "today: root-cause cosine + words"
TODAY_THRESHOLD = 0.35
THRESHOLDS = np.round(np.arange(0.10, 0.701, 0.01), 2)
MIN_PURITY: dict[SetName, float] = {"cross_types": 0.96, "paraphrase": 0.97}


class Row(BaseModel):
    model_config = ConfigDict(frozen=True)

    variant: str
    fitted_on: Half | Literal["fixed"]
    reported_on: Half
    threshold: float
    cross_purity: float
    cross_duplicate_rate: float
    paraphrase_purity: float
    paraphrase_duplicate_rate: float
    cross_ceiling: float | None  # lowest rate at purity >= 0.95, any threshold, this half
    cross_nearest_same: float  # share of grouped lessons whose best match shares their cause


def signals(items: Sequence[Labelled], embedder: Embedder) -> dict[str, sig.Scores]:
    """Every pair signal of one half's lessons."""
    drafts = [i.draft for i in items]
    texts = [f"{d.root_cause} {d.fix}" for d in drafts]
    quoted = [f"{d.symptom} {d.root_cause} {d.fix}" for d in drafts]
    words = sig.word_sets(texts)
    normalised = [sig.normalise(t) for t in texts]
    signatures = [sig.signature(t) for t in quoted]
    return {
        "root": sig.cosines(embedder.embed([d.root_cause for d in drafts])),
        "fix": sig.cosines(embedder.embed([d.fix for d in drafts])),
        "both": sig.cosines(embedder.embed(texts)),
        "root_normalised": sig.cosines(embedder.embed([sig.normalise(d.root_cause)
                                                       for d in drafts])),
        "words": sig.idf_overlap(words),
        "words_signature": sig.idf_overlap([w | s for w, s in zip(words, signatures, strict=True)]),
        "words_normalised": sig.idf_overlap(sig.word_sets(normalised)),
        "signature": sig.idf_overlap(signatures),
        "soft": sig.soft_overlap(texts, embedder, tau=0.7),
    }  # fmt: skip


Outcome = dict[SetName, tuple[float, float]]


def weighted(signals: dict[str, sig.Scores], weights: dict[str, float]) -> sig.Scores:
    """The weighted sum of some of one half's pair signals."""
    out = np.zeros_like(next(iter(signals.values())))
    for key, weight in weights.items():
        out += weight * signals[key]
    return out


def outcomes(
    scores: dict[SetName, sig.Scores], labels: dict[SetName, list[str]]
) -> dict[float, Outcome]:
    """(purity, duplicate rate) of each set at each threshold of the grid."""
    grid: dict[float, Outcome] = {}
    for t in THRESHOLDS.tolist():
        grid[t] = {s: sig.quality(sig.average_linkage(scores[s], t), labels[s]) for s in scores}
    return grid


def fit(grid: dict[float, Outcome]) -> float:
    """The threshold chosen on a half (see the module docstring); the highest if none holds."""
    ok = [t for t, o in grid.items() if all(o[s][0] >= MIN_PURITY[s] for s in o)]
    if not ok:
        return max(grid)

    def cost(t: float) -> tuple[float, float]:
        o = grid[t]
        para = o["paraphrase"][1] if "paraphrase" in o else 0.0
        return o["cross_types"][1] + 0.25 * para, -t

    return min(ok, key=cost)


def ceiling(grid: dict[float, Outcome]) -> float | None:
    rates = [o["cross_types"][1] for o in grid.values() if o["cross_types"][0] >= 0.95]
    return min(rates) if rates else None


def run(
    embedder: Embedder,
    sets: dict[SetName, Callable[[], list[Labelled]]],
    variants: dict[str, dict[str, float]] | None = None,
) -> list[Row]:
    """Every variant (default: all of `VARIANTS`), fitted on each half and reported on the
    other."""
    variants = VARIANTS if variants is None else variants
    both: tuple[Half, Half] = ("odd", "even")
    parts = {name: halves(load()) for name, load in sets.items()}
    labels = {h: {s: [i.label for i in parts[s][h]] for s in sets} for h in both}
    feats = {h: {s: signals(parts[s][h], embedder) for s in sets} for h in both}
    rows: list[Row] = []
    for name, weights in variants.items():
        grids: dict[Half, dict[float, Outcome]] = {}
        nearest: dict[Half, float] = {}
        for h in both:
            scores = {s: weighted(feats[h][s], weights) for s in sets}
            grids[h] = outcomes(scores, labels[h])
            if "cross_types" in scores:
                nearest[h] = sig.nearest_same(scores["cross_types"], labels[h]["cross_types"])
        for fitted, reported in (both, both[::-1]):
            t = fit(grids[fitted])
            rows.append(_row(name, fitted, reported, t, grids[reported], nearest))
        if name == TODAY:
            rows += [_row(name, "fixed", h, TODAY_THRESHOLD, grids[h], nearest) for h in both]
    return rows


def _row(variant: str, fitted: Half | Literal["fixed"], reported: Half, t: float,
         grid: dict[float, Outcome], nearest: dict[Half, float]) -> Row:  # fmt: skip
    o = grid[t]
    cross = o.get("cross_types", (float("nan"), float("nan")))
    para = o.get("paraphrase", (float("nan"), float("nan")))
    return Row(variant=variant, fitted_on=fitted, reported_on=reported, threshold=t,
               cross_purity=round(cross[0], 4), cross_duplicate_rate=round(cross[1], 4),
               paraphrase_purity=round(para[0], 4), paraphrase_duplicate_rate=round(para[1], 4),
               cross_ceiling=None if (c := ceiling(grid)) is None else round(c, 4),
               cross_nearest_same=round(nearest.get(reported, float("nan")), 4))  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--out", type=Path, default=None, help="JSON output file")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), default=None,
                        help="only this variant (repeatable); default: all")  # fmt: skip
    args = parser.parse_args(argv)
    embedder: Embedder = MiniLMEmbedder() if args.embedder == "minilm" else HashEmbedder()
    start = time.monotonic()
    chosen = {v: VARIANTS[v] for v in args.variant} if args.variant else None
    rows = run(embedder, {"cross_types": cross_types, "paraphrase": paraphrases}, chosen)
    table = Table(title=f"Pair signals without a model, threshold fitted on the other half "
                        f"({embedder.model_id})")  # fmt: skip
    columns = ("variant", "fitted on", "reported on", "t", "cross purity", "cross dup",
               "paraphrase purity", "paraphrase dup", "cross ceiling", "nearest same")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for r in rows:
        ceil = "-" if r.cross_ceiling is None else f"{r.cross_ceiling:.3f}"
        figures = (r.cross_purity, r.cross_duplicate_rate, r.paraphrase_purity,
                   r.paraphrase_duplicate_rate)  # fmt: skip
        cells = [f"{x:.3f}" for x in figures]
        table.add_row(r.variant, r.fitted_on, r.reported_on, f"{r.threshold:.2f}", *cells, ceil,
                      f"{r.cross_nearest_same:.2f}")  # fmt: skip
    console = Console(width=None if sys.stdout.isatty() else 190)
    console.print(table)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or REPO / "bench-results" / f"consolidate_signals-{stamp}.json"
    payload = {"benchmark": "bench_consolidate_signals", "embedder": embedder.model_id,
               "seconds": round(time.monotonic() - start, 1),
               "rows": [r.model_dump() for r in rows]}  # fmt: skip
    write_json_atomic(out, payload)
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
