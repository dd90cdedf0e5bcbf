"""scripts/bench_recall.py: metrics on hand-checkable rankings, the labelled set, a real run."""

from __future__ import annotations

from collections import Counter

import pytest

from agent.container import Limits
from agent.sandbox import Sandbox
from agent.task import load_task
from memory import LessonQuery, Memory, MiniLMEmbedder
from memory.quality import RankingMetrics, no_lesson_rate, ranking_metrics
from scripts._recall_stages import SEED_GATES
from scripts._recall_suite import Query, Suite, load_suite, run_case
from scripts._recall_traps import (
    TASKS,
    Setting,
    fit,
    root_cause,
    task_start,
    trap_tasks,
    write_lessons,
)
from scripts.bench_recall import MethodReport, run_benchmark, with_cut


def test_ranking_metrics_by_hand() -> None:
    rankings = [["a", "b"], ["b", "a", "c"], ["c", "d", "e", "a"], []]
    m = ranking_metrics(rankings, ["a", "a", "a", "a"])
    # ranks 1, 2, 4, absent
    assert m.n == 4 and m.empty == 1
    assert m.hit_at_1 == pytest.approx(1 / 4)
    assert m.hit_at_3 == pytest.approx(2 / 4)
    assert m.mrr == pytest.approx((1 + 1 / 2 + 1 / 4) / 4)
    assert no_lesson_rate([[], ["x"], [], []]) == pytest.approx(3 / 4)
    assert no_lesson_rate([]) is None
    with pytest.raises(ValueError):
        ranking_metrics([["a"]], ["a", "b"])


def test_oracle_cut_silences_unrelated_and_scores_the_rest() -> None:
    def q(qid: str, target: str | None) -> Query:
        return Query(id=qid, target=target, text="", error_types=(), stage="seed", kind="goal")

    related, unrelated = [q("r1", "a"), q("r2", "b")], [q("u1", None)]
    report = MethodReport(
        name="toy",
        related=ranking_metrics([["a"], ["c", "b"]], ["a", "b"]),
        no_lesson_rate=None,
        rankings={"r1": [("a", 5.0)], "r2": [("c", 3.0), ("b", 1.0)], "u1": [("a", 2.0)]},
    )
    cut = with_cut(report, related, unrelated)
    # cut > 2.0 keeps r1 -> [a] and r2 -> [c]: hit@1 1/2, b is gone from r2
    assert cut.no_lesson_rate == 1.0 and cut.related.hit_at_1 == pytest.approx(0.5)
    assert cut.related.mrr == pytest.approx(0.5)


def test_labelled_set_covers_the_trap_families() -> None:
    suite = load_suite()
    per_lesson = Counter(c.lesson for c in suite.cases)
    assert len(suite.cases) >= 40 and len(suite.unrelated) >= 20
    # every root cause of the trap families has at least two real manifestations
    assert len(per_lesson) >= 12 and min(per_lesson.values()) >= 2
    assert len(suite.lessons) > len(per_lesson)  # plus distractors
    assert all(c.program or c.goal for c in (*suite.cases, *suite.unrelated))


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(cpu_s=20))


def test_queries_are_the_loops_reflection_feedback(sandbox: Sandbox) -> None:
    suite = load_suite()
    case = next(c for c in suite.cases if c.id == "currency_float_dollar")
    query = run_case(case, sandbox)
    assert query.stage == "reflection" and query.error_types == ("ValueError", "runtime_error")
    assert "could not convert string to float: '$1,299.99'" in query.text
    goal = run_case(next(c for c in suite.unrelated if c.goal), sandbox)
    assert goal.stage == "seed" and goal.error_types == ()


def test_small_run_with_the_real_embedder(sandbox: Sandbox) -> None:
    # MiniLM, not the hashing double: recall quality is the point. Its cost is the one-time
    # import of torch/transformers (~5 s idle, shared with the other MiniLM tests of the
    # session; up to a minute on a saturated 2-core machine); the run itself takes seconds.
    full = load_suite()
    suite = Suite(full.lessons, full.cases, full.unrelated[-2:])  # two goals: no sandbox run
    report = run_benchmark(suite, MiniLMEmbedder(), sandbox, limit=5)
    names = [m.name for m in report.methods]
    assert names[0] == "recall as built" and any(n.startswith("BM25") for n in names)
    for method in report.methods:
        assert method.related.n == 5
        assert 0.0 <= method.related.hit_at_1 <= method.related.hit_at_3 <= 1.0
    built = report.methods[0]
    # Only seed-stage unrelated queries (goals) here: the reflection methods have none ...
    assert built.no_lesson_rate is None
    seed = {m.name: m for m in report.methods if m.name.startswith("seed stage")}
    # error text / task start x (each seed gate + as built without the stated-type gate)
    assert len(seed) == 2 * (len(SEED_GATES) + 1)
    assert all(m.no_lesson_rate is not None for m in seed.values())  # ... the seed views do
    assert all(len(r) <= 3 for r in built.rankings.values())  # the loop's lesson limit
    assert built.related.hit_at_1 > 0  # MiniLM ranks at least one right lesson first here


def test_trap_tasks_split_into_thirteen_root_causes_of_two_or_more_tasks() -> None:
    causes = Counter(root_cause(t) for t in trap_tasks())
    assert len(causes) == 13 and min(causes.values()) >= 2
    assert causes["time_zones"] == causes["date_formats"] == 2 and "dates" not in causes


def _setting(name: str, hits: tuple[float, float], empty: tuple[float, float]) -> Setting:
    def metrics(hit: float) -> RankingMetrics:
        return RankingMetrics(n=10, hit_at_1=hit, hit_at_3=hit, mrr=hit, empty=0)

    cut, gate = (float(x) for x in name.split("/"))
    return Setting(name=name, surface=True, seed_cut=cut, gate=gate, related=metrics(0.0),
                   halves=(metrics(hits[0]), metrics(hits[1])), no_lesson_rate=0.0,
                   no_lesson_halves=empty)  # fmt: skip


def test_fit_chooses_on_one_half_and_reports_on_the_other() -> None:
    grid = [
        _setting("0.3/0.3", (0.9, 0.9), (0.5, 0.95)),  # best hits, but half 1 not silent
        _setting("0.3/0.4", (0.6, 0.2), (0.92, 0.93)),
        _setting("0.3/0.5", (0.4, 0.5), (0.97, 0.96)),
    ]
    by_half = {f.fitted_on: f for f in fit(grid)}
    assert (by_half[0].seed_cut, by_half[0].gate) == (0.3, 0.4)
    assert by_half[0].fit.related.hit_at_3 == 0.6 and by_half[0].held_out.related.hit_at_3 == 0.2
    assert by_half[0].held_out.no_lesson_rate == 0.93
    assert by_half[1].gate == 0.3 and by_half[1].held_out.no_lesson_rate == 0.5


def test_a_trap_lesson_reaches_another_tasks_start_and_not_an_unrelated_one(
    sandbox: Sandbox,
) -> None:
    tasks = {t.id: t for t in trap_tasks()}
    written = write_lessons([tasks["percent_01_survey"], tasks["currency_01_invoices"]], sandbox)
    assert all("in the input:" in x.draft.symptom for x in written)  # the evidence travels
    with Memory.in_memory(MiniLMEmbedder()) as memory:
        results = memory.add_many([x.draft for x in written])
        labels = {r.lesson.id: x.root_cause for r, x in zip(results, written, strict=True)
                  if r.lesson}  # fmt: skip
        # Both asked in the lessons' scope: an unrelated task must be silenced by the gate.
        for task_id, expected in (("percent_03_battery", ["percent"]), ("word_freq", [])):
            task = tasks.get(task_id) or load_task(TASKS / task_id)
            query = task_start(task, None)
            hits = memory.recall(LessonQuery(text=query.text, surface=query.surface,
                                             scope="traps", limit=3, token_budget=300))  # fmt: skip
            assert [labels[h.lesson.id] for h in hits][:1] == expected, task_id
