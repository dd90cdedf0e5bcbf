"""scripts/bench_learning.py on tiny generated tasks with the scripted LLM and the real sandbox.

The script answers like a model that only gets money parsing right once a lesson about it
is in the prompt, so the memory conditions have something to recall; no real model runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import pytest
from rich.console import Console

from agent.container import Limits
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from agent.task import load_task
from memory import HashEmbedder, LessonNotFoundError, Memory
from memory.types import NullRecall
from scripts._benchlib import (
    RunRecord,
    discover_tasks,
    record,
    round_robin,
    select_tasks,
    summarise,
)
from scripts._lesson_audit import audit
from scripts.bench_learning import BenchConfig, fit_budget, plan, run_bench
from tests import helpers
from tests.helpers import GEN, REFINE, code, fix

LESSON_SYSTEM = "You write one lesson"
ROOT_CAUSE = "Money amounts carry a currency symbol and thousands separators."
NAIVE = """import csv, json
total = sum(float(r["amount"]) for r in csv.DictReader(open("{name}")))
json.dump({{"total": round(total, 2)}}, open("result.json", "w"))"""
GOOD = """import csv, json
clean = lambda s: float(s.replace("$", "").replace(",", ""))
total = sum(clean(r["amount"]) for r in csv.DictReader(open("{name}")))
json.dump({{"total": round(total, 2)}}, open("result.json", "w"))"""
LESSON = json.dumps(
    {
        "root_cause": ROOT_CAUSE,
        "fix": "Strip '$' and ',' before float().",
        "applies_when": "CSV money columns exported from spreadsheets",
    }
)


def make_tasks(root: Path) -> Path:
    """Three 'money' tasks (the trap: '$1,200.50') and one 'plain' task (no trap)."""
    specs = [
        ("money", 1, '"$1,200.50"'),
        ("money", 2, '"$2,000"'),
        ("money", 3, "$7.25"),
        ("plain", 4, "3.5"),
    ]
    for family, i, value in specs:
        task = root / f"{family}_{i}"
        (task / "workspace").mkdir(parents=True)
        (task / "workspace" / f"amounts_{i}.csv").write_text(f"item,amount\na,{value}\nb,1\n")
        expected = float(value.strip('"').replace("$", "").replace(",", "")) + 1
        (task / "check.py").write_text(
            f"import json\ngot = json.load(open('result.json'))['total']\n"
            f"assert abs(got - {expected}) < 0.01, f'total: wrong value, got {{got}}'\n"
        )
        (task / "task.toml").write_text(
            f'goal = "Write solution.py that reads amounts_{i}.csv (columns item, amount) and '
            f'writes result.json as {{\\"total\\": sum of amount}}"\n'
            'output = ["solution.py"]\n'
            'check = "python solution.py && python \\"$TASK_DIR/check.py\\""\n'
            f'timeout_s = 20\ntags = ["{family}"]\nscope = "bench-test"\n'
        )
    (root / "_helpers" / "not_a_task").mkdir(parents=True)  # skipped: starts with "_"
    (root / "_helpers" / "not_a_task" / "task.toml").write_text('goal = "x"\n')
    return root


def scripted_model(interrupt_after: int | None = None) -> ScriptedLLM:
    """Generator: naive code unless a money lesson is in the prompt; refiner: the fix."""
    calls = 0

    def reply(messages: Sequence[Message]) -> str:
        nonlocal calls
        calls += 1
        if interrupt_after is not None and calls > interrupt_after:
            raise KeyboardInterrupt  # what Ctrl-C does in the middle of a model call
        system, user = messages[0].content, messages[-1].content
        if LESSON_SYSTEM in system:
            return LESSON
        found = re.search(r"amounts_\d+\.csv", user)
        assert found is not None, user
        name = found.group(0)
        if REFINE in system:
            return fix(GOOD.format(name=name), "strip currency symbols")
        assert GEN in system
        return code((GOOD if ROOT_CAUSE in user else NAIVE).format(name=name))

    return ScriptedLLM.cycle([reply])


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(cpu_s=20))


def test_discovery_skips_helpers_and_selects_per_family(tmp_path: Path) -> None:
    root = make_tasks(tmp_path / "tasks")
    found = discover_tasks([root, root / "money_1"])
    assert [p.name for p in found] == ["money_1", "money_2", "money_3", "plain_4"]
    assert round_robin([1, 2, 3, 4], lambda x: str(x % 2), 3) == [1, 2, 3]
    config = BenchConfig(
        task_dirs=(root,), orders=2, seeds=1, train_frac=0.5, sec_per_run=40, sec_per_retro=0
    )
    # none once per task; learning full stream per order; frozen only the eval half
    assert plan(config, 4) == {"none": 4, "learning": 8, "frozen": 4}
    tasks = [load_task(p) for p in found]
    # two per family first (so a short stream can transfer), then the rest
    assert [t.id for t in select_tasks(tasks, 3, 2)] == ["money_1", "money_2", "plain_4"]
    assert fit_budget(config.model_copy(update={"budget_min": 16 * 40 / 60}), 4) == 4
    # 12 runs of budget: 3 tasks need 3 + 6 + 2 = 11 runs, 4 tasks 16
    assert fit_budget(config.model_copy(update={"budget_min": 12 * 40 / 60}), 4) == 3
    assert fit_budget(config.model_copy(update={"limit": 2}), 4) == 2


def test_summary_is_hand_checkable() -> None:
    def rec(order: int, pos: int, passed: bool, first: bool, tokens: int) -> RunRecord:
        return RunRecord(
            condition="none",
            seed=0,
            order=order,
            position=pos,
            phase="eval" if pos else "train",
            task_id=f"t{pos}",
            family="f",
            passed=passed,
            first_round_passed=first,
            rounds=1 if first else 2,
            stop_reason="passed",
            tokens=tokens,
            seconds=1.0,
        )

    records = [
        rec(0, 0, True, True, 100),
        rec(0, 1, False, False, 300),
        rec(1, 0, True, False, 200),
        rec(1, 1, True, True, 200),
    ]
    whole = summarise(records).whole["none"]
    assert whole.final_success.mean == pytest.approx(0.75)  # orders: 1/2 and 2/2
    assert (whole.final_success.min, whole.final_success.max) == (0.5, 1.0)
    assert whole.tokens_per_solved.mean == pytest.approx((400 / 1 + 400 / 2) / 2)
    assert whole.mean_rounds.mean == pytest.approx(1.5)


def test_a_round_one_pass_by_a_hot_sample_is_counted_as_such(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    task = helpers.make_task(tmp_path)
    key = {"seed": 0, "order": 0, "position": 0, "phase": "eval"}

    def first_round(replies: list[str]) -> RunRecord:
        llm = ScriptedLLM.by_system({GEN: replies})
        config = LoopConfig(first_pool=2, max_rounds=1)
        result = ReflectiveAgent(llm, recall=NullRecall(), sandbox=sandbox, config=config).run(task)
        return record("none", task, result, key)

    by_sample = first_round([code(helpers.CRASH), code(helpers.GOOD)])
    assert by_sample.first_round_passed and by_sample.first_round_by_sample
    greedy = first_round([code(helpers.GOOD)])
    assert greedy.first_round_passed and not greedy.first_round_by_sample
    assert not greedy.first_round_by_control


def test_three_conditions_learn_recall_and_write_results(tmp_path: Path, sandbox: Sandbox) -> None:
    root = make_tasks(tmp_path / "tasks")
    out = tmp_path / "out"
    config = BenchConfig(
        task_dirs=(root,), model="scripted", orders=2, train_frac=0.5, max_rounds=3, embedder="hash"
    )
    results = run_bench(
        config,
        out,
        llm=scripted_model(),
        embedder=HashEmbedder(),
        sandbox=sandbox,
        console=Console(quiet=True),
        keep_stores=True,
    )

    data = json.loads((out / "bench_learning.json").read_text())
    assert data["benchmark"] == "bench_learning" and not data["interrupted"]
    assert (out / "bench_learning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {r["condition"] for r in data["records"]} == {"none", "learning", "frozen"}
    assert set(data["summary"]["whole"]) == {"none", "learning"}
    assert set(data["summary"]["eval"]) == {"none", "learning", "frozen"}
    assert len(results.records) == 3 * 4 * 2  # every condition at every position, both orders
    # Every loop run that was not reused left its trajectory for the post-mortem.
    runs = sorted((out / "runs").glob("*.json"))
    assert len(runs) == sum(not r.reused for r in results.records)
    trajectories = {p.stem: json.loads(p.read_text()) for p in runs}
    assert all(t["run_id"] == stem and t["rounds"] for stem, t in trajectories.items())
    assert {t["task_id"] for t in trajectories.values()} == {r.task_id for r in results.records}

    by = {c: [r for r in results.records if r.condition == c] for c in ("none", "learning")}
    assert not any(r.recalled_seed or r.recalled_reflection for r in by["none"])
    # Each order's later money tasks recall the first one's lesson at their start and pass in
    # round 1; without memory every money task needs its second round.
    later = [r for r in by["learning"] if r.family == "money" and r.lessons_created == 0]
    assert later and all(r.recalled_seed and r.first_round_passed for r in later)
    assert not any(r.first_round_passed for r in by["none"] if r.family == "money")
    assert sum(r.lessons_created for r in by["learning"]) >= 2  # once per order's first failure
    # Every stored lesson carries its verified change and comes from a solved run.
    audit = data["audit"]
    assert audit["lessons"] >= 2 and audit["verified"] == audit["lessons"]
    assert audit["unverified_share"] == 0.0 and audit["from_unsolved_runs"] == 0
    assert audit["recalls"] >= 1 and audit["recalls_of_unsolved"] == 0

    # Until a lesson is stored, a learning run can recall nothing: it is the "none" run,
    # taken as it is (and still recorded and learned from); after that every run is real.
    for order in (0, 1):
        stream = [r for r in by["learning"] if r.order == order]
        first_lesson = next(p for p, r in enumerate(stream) if r.lessons_created)
        assert all(r.reused for r in stream[: first_lesson + 1])
        assert not any(r.reused for r in stream[first_lesson + 1 :])
        none = {r.position: r for r in by["none"] if r.order == order}
        for r in stream[: first_lesson + 1]:
            assert (r.passed, r.tokens, r.rounds) == (
                none[r.position].passed, none[r.position].tokens, none[r.position].rounds
            )  # fmt: skip

    # Through the store itself: the lesson exists, was recalled, and its uses were recorded.
    with Memory.open(str(out / "stores" / "learning-s0-o0"), embedder=HashEmbedder()) as memory:
        assert memory.get_run("learning-0-0-0").passed == by["learning"][0].passed
        lessons = memory.list_lessons().items
        assert any(ROOT_CAUSE in lesson.root_cause for lesson in lessons)
        used = [lesson for lesson in lessons if lesson.recalled > 0]
        assert used and memory.uses(used[0].id)
    # The frozen store recorded nothing during its evaluation runs.
    with Memory.open(str(out / "stores" / "frozen-s0-o0"), embedder=HashEmbedder()) as frozen:
        assert frozen.list_lessons().total >= 1
        with pytest.raises(LessonNotFoundError):
            frozen.get_run(f"frozen-0-0-{results.split}")


def test_ctrl_c_keeps_partial_results(tmp_path: Path, sandbox: Sandbox) -> None:
    root = make_tasks(tmp_path / "tasks")
    out = tmp_path / "out"
    # One draw per round 1, so the first runs finish before the interrupt.
    config = BenchConfig(task_dirs=(root,), orders=1, embedder="hash", first_pool=1)
    results = run_bench(
        config,
        out,
        llm=scripted_model(interrupt_after=5),
        embedder=HashEmbedder(),
        sandbox=sandbox,
        console=Console(quiet=True),
    )
    data = json.loads((out / "bench_learning.json").read_text())
    assert results.interrupted and data["interrupted"]
    assert 0 < len(data["records"]) < 12
    assert (out / "bench_learning.png").is_file()


def test_the_audit_counts_unverified_lessons_and_recalls_of_unsolved_runs() -> None:
    def rec(position: int, passed: bool, recalled: tuple[str, ...] = ()) -> RunRecord:
        return RunRecord(
            condition="learning", seed=0, order=0, position=position, phase="train",
            task_id=f"t{position}", family="f", passed=passed, first_round_passed=False,
            rounds=2, stop_reason="passed" if passed else "max_rounds", tokens=1, seconds=1.0,
            recalled_seed=recalled,
        )  # fmt: skip

    def lesson(lesson_id: str, fix: str, run: int, error_type: str = "ValueError") -> dict:
        evidence = [{"run_id": f"learning-0-0-{run}", "excerpt": "x"}]
        return {"id": lesson_id, "fix": fix, "error_type": error_type, "evidence": evidence}

    records = [rec(0, True), rec(1, False), rec(2, True, ("good", "junk")), rec(3, True, ("junk",))]
    stored = {
        "learning-s0-o0": [
            lesson("good", "strip it. verified change: replace `a` with `b`", 0),
            lesson("junk", "Ensure the file has the correct column order", 1),
            lesson("advice", "read the header first", 2, error_type="KeyError"),
        ]
    }
    found = audit(records, stored)
    assert (found.lessons, found.verified, found.unverified_share) == (3, 1, 0.667)
    assert (found.from_unsolved_runs, found.recalls, found.recalls_of_unsolved) == (1, 3, 2)


def test_ctrl_c_before_the_first_run_finished_still_writes_the_results(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    out = tmp_path / "out"
    config = BenchConfig(task_dirs=(make_tasks(tmp_path / "tasks"),), orders=1, embedder="hash")
    results = run_bench(
        config,
        out,
        llm=scripted_model(interrupt_after=1),
        embedder=HashEmbedder(),
        sandbox=sandbox,
        console=Console(quiet=True),
    )
    data = json.loads((out / "bench_learning.json").read_text())
    assert results.interrupted and data["records"] == []
    assert (out / "bench_learning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def outcomes(records: Sequence[RunRecord]) -> list[tuple[object, ...]]:
    """What a record says about its run, without ids and times (which differ run to run)."""
    return sorted(
        (r.condition, r.order, r.position, r.task_id, r.passed, r.first_round_passed, r.rounds,
         r.tokens, bool(r.recalled_seed), r.lessons_created > 0)
        for r in records
    )  # fmt: skip


@pytest.mark.parametrize("share", [0.3, 0.8])  # before the split, and after it
def test_an_interrupted_bench_resumes_where_it_stopped_and_ends_as_one_run_would(
    tmp_path: Path, sandbox: Sandbox, share: float
) -> None:
    root = make_tasks(tmp_path / "tasks")
    config = BenchConfig(task_dirs=(root,), orders=1, embedder="hash", first_pool=1)
    bench = partial(
        run_bench, config, embedder=HashEmbedder(), sandbox=sandbox, console=Console(quiet=True)
    )
    whole_model = scripted_model()
    whole = bench(tmp_path / "whole", llm=whole_model, keep_stores=True)
    out = tmp_path / "out"
    interrupt_after = int(share * len(whole_model.calls))
    first = bench(out, llm=scripted_model(interrupt_after=interrupt_after), keep_stores=True)
    assert first.interrupted and 0 < len(first.records) < len(whole.records)
    # The frozen store is made at the split: the later interrupt comes after it.
    assert (out / "stores" / "frozen-s0-o0").is_dir() is (share > 0.5)
    kept = outcomes(first.records)

    model = scripted_model()
    again = bench(out, llm=model, keep_stores=True, resume=True)
    data = json.loads((out / "bench_learning.json").read_text())
    assert not again.interrupted and not data["interrupted"]
    [(stopped, went_on)] = data["resumed"]
    assert first.finished == stopped and first.finished < went_on
    assert outcomes(again.records) == outcomes(whole.records)
    assert set(kept) <= set(outcomes(again.records))  # what was recorded stays as it was
    slots = [(r.condition, r.order, r.position) for r in again.records]
    assert len(slots) == len(set(slots))  # nothing recorded twice
    # The store learned each lesson once; the kept runs were not run again.
    assert (
        data["audit"]["lessons"]
        == json.loads((tmp_path / "whole" / "bench_learning.json").read_text())["audit"]["lessons"]
    )
    assert len(model.calls) < len(whole_model.calls)


def test_resume_refuses_other_settings_and_a_bench_without_its_stores(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    root = make_tasks(tmp_path / "tasks")
    config = BenchConfig(task_dirs=(root,), orders=1, embedder="hash", first_pool=1)
    bench = partial(
        run_bench, embedder=HashEmbedder(), sandbox=sandbox, console=Console(quiet=True)
    )
    with pytest.raises(SystemExit, match="no .*bench_learning.json to go on from"):
        bench(config, tmp_path / "none", llm=scripted_model(), resume=True)
    bench(config, tmp_path / "out", llm=scripted_model(interrupt_after=5), keep_stores=True)
    other = config.model_copy(update={"max_rounds": 2})
    with pytest.raises(SystemExit, match="other settings: max_rounds"):
        bench(other, tmp_path / "out", llm=scripted_model(), keep_stores=True, resume=True)
    bench(config, tmp_path / "gone", llm=scripted_model(interrupt_after=5))  # stores not kept
    with pytest.raises(SystemExit, match="were not kept"):
        bench(config, tmp_path / "gone", llm=scripted_model(), resume=True)
    # Without --resume, an --out with an earlier run's stores is refused, not reused.
    with pytest.raises(SystemExit, match="holds an earlier run's stores"):
        bench(config, tmp_path / "out", llm=scripted_model(), keep_stores=True)
    # A run without memory that later positions reuse must have left its trajectory.
    for kept in (tmp_path / "out" / "runs").glob("none-*.json"):
        kept.unlink()
    with pytest.raises(SystemExit, match="lacks none-0-"):
        bench(config, tmp_path / "out", llm=scripted_model(), keep_stores=True, resume=True)
