"""Where a learning stream's tokens went on draws that were never checked.

    python scripts/unchecked_draws.py /work/bench-out/s25/stream12/runs

Reads the run JSON that `bench_learning.py --out DIR` keeps (DIR/runs/*.json, each an
`agent.result.RunResult`) and counts each round's unchecked draws (`RoundRecord.resampled`:
a repeat of an earlier candidate, or a reply without the output files), whether a repeat
was of the round being repaired, and the tokens such draws cost (a round's usage beyond its
checked candidates'); and the draws `agent.draws.steer` moved to another base or did not
draw (`RoundRecord.steered`, free). Runs written before `resampled` existed count tokens
only.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.result import RunResult


def count(runs: Sequence[RunResult]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for run in runs:
        for record in run.rounds:
            out["rounds"] += 1
            out["tokens"] += record.usage.total_tokens
            if record.pool:
                out["unchecked_tokens"] += record.usage.total_tokens - sum(
                    e.tokens for e in record.pool
                )
            for why in record.resampled:
                out["unchecked"] += 1
                origin, _, reason = why.partition(": ")
                if not reason.startswith("repeated round "):
                    out["no_files"] += 1
                    continue
                repeated_round = int(reason.split()[2])
                key = "of_base_round" if repeated_round == record.base_round else "of_other"
                out[f"repeats_{key}"] += 1
            for why in record.steered:  # moved off an anchored request, or not drawn
                out["steered_not_drawn" if why.endswith("not drawn") else "steered_moved"] += 1
    return dict(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs_dir", type=Path)
    a = p.parse_args(argv)
    runs = [
        RunResult.model_validate_json(f.read_text(encoding="utf-8"))
        for f in sorted(a.runs_dir.glob("*.json"))
    ]
    figures = count(runs)
    share = figures.get("unchecked_tokens", 0) / max(1, figures.get("tokens", 0))
    print(f"{len(runs)} runs; " + ", ".join(f"{k} {v}" for k, v in sorted(figures.items())))
    print(f"share of tokens on unchecked draws: {share:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
