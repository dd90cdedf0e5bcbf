"""Consolidation quality on labelled lesson sets: purity and duplicate rate, before and after.

    python scripts/bench_consolidate_quality.py                  # both sets, MiniLM
    python scripts/bench_consolidate_quality.py --embedder hash --out /tmp/q.json
    python scripts/bench_consolidate_quality.py --judge-model local   # + the model's verdicts

Two labelled sets, each scored on its odd and its even root-cause groups (singletons split
the same way) in a fresh in-memory store (write-time dedup off, so "before" is an
unconsolidated store), one `consolidate --no-model` pass each:
- `paraphrase`: tests/retro/labelled.py, 20 groups x 10 templated paraphrases + singletons,
  every group under one error type;
- `cross_types`: benchmarks/consolidate/cross_types.toml, 16 root causes written up by hand
  under several error types each (a `ValueError` in one run, `check_failed` in another)
  + 18 singletons.
Methods: per (scope, error type) leader clustering (the pass before cross-type clustering)
and across error types (retrospectives.link, the default); then across error types with a
judge on the uncertain band of pair scores (retrospectives.judge): a scripted oracle that
answers from the labels (the ceiling of the mechanism: what a judge that is always right
would give, not a model figure), the same oracle wrong on one pair in ten (fixed by a hash
of the pair), and with `--judge-model SPEC` the model's own verdicts. "calls" counts the
pairs asked. Purity: share of lessons whose
cluster's majority label is their own; duplicate rate: share of active lessons whose label
another active lesson already has (0 = one lesson per root cause).
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from memory import Embedder, HashEmbedder, LessonDraft, Memory, MiniLMEmbedder
from memory.types import Evidence, LessonFilter
from retrospectives.consolidate import ConsolidationConfig, consolidate
from retrospectives.judge import ModelPairJudge, PairJudge, ScriptedPairJudge, Verdict
from scripts._benchlib import REPO, write_json_atomic
from tests.retro.labelled import labelled_set

CROSS = REPO / "benchmarks" / "consolidate" / "cross_types.toml"
Method = Literal[
    "before",
    "per error type",
    "across error types",
    "+ judge: oracle",
    "+ judge: oracle, 10% wrong",
    "+ judge: model",
]
METHODS: dict[Method, ConsolidationConfig | None] = {
    "before": None,
    "per error type": ConsolidationConfig(across_error_types=False),
    "across error types": ConsolidationConfig(),
    "+ judge: oracle": ConsolidationConfig(),
    "+ judge: oracle, 10% wrong": ConsolidationConfig(),
}


class Labelled(BaseModel):
    model_config = ConfigDict(frozen=True)

    draft: LessonDraft
    label: str


class Quality(BaseModel):
    model_config = ConfigDict(frozen=True)

    labelled_set: str
    half: Literal["odd", "even"]
    method: Method
    lessons: int
    labels: int
    active: int
    merges: int
    purity: float
    duplicate_rate: float
    calls: int = 0


def cross_types(path: Path = CROSS, scope: str = "demo") -> list[Labelled]:
    """The hand-written cross-type set; a lesson without `group` is a singleton."""
    rows = tomllib.loads(path.read_text(encoding="utf-8"))["lesson"]
    out = []
    for n, row in enumerate(rows):
        label = row.pop("group", None) or f"single_{n}"
        draft = LessonDraft(
            scope=scope, evidence=(Evidence(run_id=f"run-{n}", excerpt=row["symptom"][:40]),), **row
        )
        out.append(Labelled(draft=draft, label=label))
    return out


def paraphrases() -> list[Labelled]:
    return [Labelled(draft=i.draft, label=i.label) for i in labelled_set()]


def halves(items: Sequence[Labelled]) -> dict[Literal["odd", "even"], list[Labelled]]:
    """Odd and even groups in order of first appearance; singletons alternate too."""
    groups = list(dict.fromkeys(i.label for i in items if not i.label.startswith("single_")))
    singles = list(dict.fromkeys(i.label for i in items if i.label.startswith("single_")))
    odd = set(groups[0::2] + singles[0::2])
    return {
        "odd": [i for i in items if i.label in odd],
        "even": [i for i in items if i.label not in odd],
    }


def quality(memory: Memory, label_of: dict[str, str]) -> tuple[float, float, int]:
    """(purity, duplicate rate, active lessons) over the stored lessons."""
    lessons = memory.list_lessons(LessonFilter(limit=1000)).items
    active = [les for les in lessons if les.status != "merged"]
    members = [[label_of[i] for i in (les.merged_from or (les.id,))] for les in active]
    majority = [Counter(m).most_common(1)[0] for m in members]
    purity = sum(count for _, count in majority) / sum(len(m) for m in members)
    labels = [label for label, _ in majority]
    return purity, (len(labels) - len(set(labels))) / len(labels), len(active)


def oracle(items: Sequence[Labelled], wrong_every: int = 0) -> ScriptedPairJudge:
    """A judge that answers from the labels (the texts are root cause + fix, as the pass
    hands them); `wrong_every=n`: the answer is flipped for one pair in n (by a hash)."""
    label = {f"{i.draft.root_cause} {i.draft.fix}": i.label for i in items}

    def decide(first: str, second: str) -> Verdict:
        same = label[first] == label[second]
        pair = "\n".join(sorted((first, second))).encode()
        return (not same) if wrong_every and zlib.crc32(pair) % wrong_every == 0 else same

    return ScriptedPairJudge(decide)


def judge_for(
    method: Method, items: Sequence[Labelled], model: PairJudge | None
) -> PairJudge | None:
    if method == "+ judge: oracle":
        return oracle(items)
    if method == "+ judge: oracle, 10% wrong":
        return oracle(items, wrong_every=10)
    return model if method == "+ judge: model" else None


def measure(
    name: str,
    half: Literal["odd", "even"],
    items: Sequence[Labelled],
    embedder: Embedder,
    model: PairJudge | None = None,
) -> list[Quality]:
    out = []
    methods = dict(METHODS)
    if model is not None:
        methods["+ judge: model"] = ConsolidationConfig()
    for method, config in methods.items():
        judge = judge_for(method, items, model)
        asked = judge.asked if judge else 0
        with Memory.in_memory(embedder, dedup_similarity=1.01) as memory:
            results = memory.add_many([i.draft for i in items])
            label_of = {
                r.lesson.id: i.label for r, i in zip(results, items, strict=True) if r.lesson
            }
            merges = (
                0
                if config is None
                else len(consolidate(memory, llm=None, config=config, judge=judge).merges)
            )
            purity, dup, active = quality(memory, label_of)
        out.append(
            Quality(labelled_set=name, half=half, method=method, lessons=len(items),
                    labels=len({i.label for i in items}), active=active, merges=merges,
                    purity=round(purity, 4), duplicate_rate=round(dup, 4),
                    calls=(judge.asked - asked) if judge else 0)
        )  # fmt: skip
    return out


def model_judge(spec: str | None) -> PairJudge | None:
    if spec is None:
        return None
    from agent.app.settings import Settings
    from agent.llm.resolve import resolve_llm

    return ModelPairJudge(resolve_llm(spec, Settings.from_env(model=spec)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--out", type=Path, default=None, help="JSON output file")
    parser.add_argument("--judge-model", default=None, help="model spec for the band's judge")
    parser.add_argument("--sets", nargs="+", choices=("paraphrase", "cross_types"),
                        default=["paraphrase", "cross_types"])  # fmt: skip
    args = parser.parse_args(argv)
    model = model_judge(args.judge_model)
    embedder: Embedder = MiniLMEmbedder() if args.embedder == "minilm" else HashEmbedder()
    start = time.monotonic()
    rows: list[Quality] = []
    sets = {"paraphrase": paraphrases, "cross_types": cross_types}
    for name in args.sets:
        for half, part in halves(sets[name]()).items():
            rows += measure(name, half, part, embedder, model)
    table = Table(title=f"Consolidation quality, one pass without a model ({embedder.model_id})")
    for column in ("set", "half", "method", "lessons", "labels", "merges", "active", "purity",
                   "duplicate rate", "calls"):  # fmt: skip
        table.add_column(column)
    for r in rows:
        counts = (str(r.lessons), str(r.labels), str(r.merges), str(r.active))
        table.add_row(r.labelled_set, r.half, r.method, *counts, f"{r.purity:.3f}",
                      f"{r.duplicate_rate:.3f}", str(r.calls))  # fmt: skip
    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(table)
    out = (
        args.out
        or REPO / "bench-results" / f"consolidate_quality-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    payload = {"benchmark": "bench_consolidate_quality", "embedder": embedder.model_id,
               "seconds": round(time.monotonic() - start, 1),
               "rows": [r.model_dump() for r in rows]}  # fmt: skip
    write_json_atomic(out, payload)
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
