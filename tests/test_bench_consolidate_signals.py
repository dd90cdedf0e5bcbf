"""scripts/bench_consolidate_signals.py: the pair signals, the linkage against a real pass,
and the fit-on-one-half protocol (hashing embedder, real in-memory store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory import HashEmbedder, LessonDraft
from memory.store import Memory
from memory.types import LessonFilter
from retrospectives.consolidate import consolidate
from retrospectives.link import Lexical
from scripts import _pair_signals as sig
from scripts.bench_consolidate_quality import cross_types
from scripts.bench_consolidate_signals import VARIANTS, fit, main, run

CAUSES = [
    ("ValueError", "The amount uses a comma as thousands separator '1,299.99'.",
     "value.replace(',', '') before float()"),
    ("check_failed", "Grouping commas in '2,450.00' cut the number at the comma.",
     "Delete the thousands separators, then convert."),
    ("ValueError", "Readings use a decimal comma: '21,4'.", "value.replace(',', '.') then float()"),
    ("KeyError", "The file starts with a byte order mark so the first header is '\\ufeffid'.",
     "open(path, encoding='utf-8-sig')"),
    ("check_failed", "A BOM sticks to the first header name of the file.",
     "Read it with encoding='utf-8-sig'."),
    ("TypeError", "Naive and aware datetimes are compared.", "Make every datetime aware in UTC."),
    ("check_failed", "Offsets were dropped so times from two zones compare as one zone.",
     "Convert to UTC with astimezone before comparing."),
    ("ValueError", "Missing scores are written as 'N/A'.",
     "Skip 'N/A' cells instead of converting."),
]  # fmt: skip


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory.in_memory(HashEmbedder(), dedup_similarity=1.01) as m:
        yield m


def test_signature_keeps_what_tells_two_comma_causes_apart() -> None:
    thousands = sig.signature("could not convert '1,299.99'; fix: value.replace(',', '')")
    decimal = sig.signature("could not convert '21,4'; fix: value.replace(',', '.')")
    assert "shape:9,999.99" in thousands and "shape:9,9" in decimal
    assert "replace:,>" in thousands and "replace:,>." in decimal
    assert "call:replace" in thousands & decimal
    assert "kw:encoding=utf-8-sig" in sig.signature("open(path, encoding='utf-8-sig')")
    assert "literal:;" in sig.signature("split on ';' instead")
    assert "format:%z" in sig.signature("the strptime format has no %z")
    assert sig.value_shape("€1,234.50") == "¤9,999.99"


def test_normalise_drops_what_one_run_names() -> None:
    text = "payroll.csv: parse_amount got '1,299.99' and 42 rows"
    assert sig.normalise(text) == "the file: name got value and number rows"


def test_idf_overlap_is_the_pass_word_overlap() -> None:
    texts = [d[1] + " " + d[2] for d in CAUSES]
    mine = sig.idf_overlap(sig.word_sets(texts))
    theirs = Lexical(texts)
    for i in range(len(texts)):
        for j in range(len(texts)):
            if i != j:
                assert mine[i, j] == pytest.approx(theirs.overlap(i, j))


def test_soft_overlap_at_tau_above_one_is_the_exact_overlap() -> None:
    texts = [d[1] + " " + d[2] for d in CAUSES]
    exact = sig.idf_overlap(sig.word_sets(texts))
    soft = sig.soft_overlap(texts, HashEmbedder(), tau=1.01)
    # Exact matches only: each direction is the shared mass over that text's own mass, and
    # the larger direction is the one over the smaller mass.
    assert np.allclose(soft, exact)
    assert (sig.soft_overlap(texts, HashEmbedder(), tau=0.0) >= exact - 1e-12).all()


def test_linkage_gives_the_clusters_of_a_real_pass(memory: Memory) -> None:
    """The bench's linkage on the pass's own score = the pass on a real store (all pairs are
    neighbours in a scope this small)."""
    drafts = [
        LessonDraft(scope="s", error_type=t, symptom=f"{t} in run {n}", root_cause=r, fix=f)
        for n, (t, r, f) in enumerate(CAUSES)
    ]
    ids = [r.lesson.id for r in memory.add_many(drafts) if r.lesson]
    roots = sig.cosines(HashEmbedder().embed([d.root_cause for d in drafts]))
    words = sig.idf_overlap(sig.word_sets(f"{d.root_cause} {d.fix}" for d in drafts))
    mine = sig.average_linkage(0.4 * roots + 0.6 * words, 0.35)
    report = consolidate(memory, llm=None)
    merged = {frozenset(m.member_ids) for m in report.merges}
    assert merged == {frozenset(ids[i] for i in c) for c in mine if len(c) > 1}
    assert merged  # the set is built so that the pass merges something
    lessons = memory.list_lessons(LessonFilter(limit=100)).items
    assert len([a for a in lessons if a.status != "merged"]) == len(mine)


def test_fit_takes_the_lowest_rate_that_keeps_purity_and_the_higher_threshold_on_ties() -> None:
    grid = {
        0.2: {"cross_types": (0.90, 0.1), "paraphrase": (1.0, 0.0)},  # impure
        0.3: {"cross_types": (0.97, 0.4), "paraphrase": (1.0, 0.0)},
        0.4: {"cross_types": (0.98, 0.4), "paraphrase": (1.0, 0.0)},
        0.5: {"cross_types": (1.00, 0.6), "paraphrase": (1.0, 0.0)},
    }
    assert fit(grid) == 0.4
    assert fit({0.2: grid[0.2]}) == 0.2  # nothing holds: the highest threshold


def test_run_reports_each_variant_on_the_half_it_was_not_fitted_on() -> None:
    today = next(iter(VARIANTS))
    rows = run(HashEmbedder(), {"cross_types": cross_types}, {today: VARIANTS[today]})
    directions = {(r.fitted_on, r.reported_on) for r in rows}
    assert directions == {("odd", "even"), ("even", "odd"), ("fixed", "odd"), ("fixed", "even")}
    assert all(0 < r.cross_purity <= 1 and 0 <= r.cross_duplicate_rate < 1 for r in rows)
    assert all(np.isnan(r.paraphrase_purity) for r in rows)  # the set was not asked for
    assert all(0 < r.cross_nearest_same <= 1 for r in rows)


def test_nearest_same_counts_grouped_lessons_only() -> None:
    scores = np.array(
        [[1, 0.9, 0.1, 0.2], [0.9, 1, 0.1, 0.8], [0.1, 0.1, 1, 0.3], [0.2, 0.8, 0.3, 1]]
    )
    # a's best is b (same), b's best is a (same), c's best is single d (other); d not counted
    assert sig.nearest_same(scores, ["g", "g", "h", "single_1"]) == pytest.approx(2 / 3)


def test_main_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    today = next(iter(VARIANTS))
    assert main(["--embedder", "hash", "--out", str(out), "--variant", today]) == 0
    payload = json.loads(out.read_text())
    assert payload["embedder"].startswith("hash") and len(payload["rows"]) == 4
