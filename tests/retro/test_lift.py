"""Lift statistics and the validate / flag / decay policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.embeddings import HashEmbedder
from memory.lift import LessonLift, wilson
from memory.store import Memory
from memory.types import LessonDraft
from retrospectives.lift import LiftPolicy, apply_lift, decide

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def stat(
    lesson_id: str = "L",
    *,
    n: int = 0,
    passed: int = 0,
    status: str = "candidate",
    age_days: float = 0,
    used_days_ago: float | None = None,
) -> LessonLift:
    low, high = wilson(passed, n)
    return LessonLift.model_validate(
        {
            "lesson_id": lesson_id,
            "scope": "s",
            "error_type": "E",
            "status": status,
            "n": n,
            "passed": passed,
            "rate": passed / n if n else None,
            "low": low,
            "high": high,
            "baseline_kind": "none",
            "baseline_n": 0,
            "baseline_passed": 0,
            "baseline_rate": None,
            "lift": None,
            "rounds_with": None,
            "rounds_without": None,
            "last_used": NOW - timedelta(days=used_days_ago) if used_days_ago is not None else None,
            "updated_at": NOW - timedelta(days=age_days),
        }
    )


def test_wilson_is_wide_for_small_n_and_narrow_for_large() -> None:
    low, high = wilson(1, 1)
    assert low == pytest.approx(0.2065, abs=1e-3) and high == 1.0
    low, high = wilson(500, 1000)
    assert high - low < 0.07
    assert wilson(0, 0) == (0.0, 1.0)


def test_policy_validates_flags_and_decays() -> None:
    lifts = [
        stat("helped", n=1, passed=1),
        stat("misleads", n=4, passed=0),
        stat("one_bad_run", n=1, passed=0),
        stat("stale", age_days=120),
        stat("stale_validated", status="validated", age_days=200, used_days_ago=100),
        stat("recent_use", age_days=200, used_days_ago=3),
    ]
    d = decide(lifts, LiftPolicy(), now=NOW, flagged=set())
    assert d.validate_ids == ("helped",)
    assert [i for i, _ in d.flag] == ["misleads"] and "4 failing of 4 runs" in d.flag[0][1]
    assert dict(d.demote) == {"stale": "deprecated", "stale_validated": "candidate"}


def test_a_flagged_lesson_is_not_validated_or_flagged_twice() -> None:
    d = decide([stat("x", n=5, passed=1)], LiftPolicy(), now=NOW, flagged={"x"})
    assert d.validate_ids == () and d.flag == ()


def test_apply_lift_on_a_store() -> None:
    with Memory.in_memory(HashEmbedder()) as memory:
        added = memory.add_many(
            [
                LessonDraft(
                    scope="s",
                    error_type="KeyError",
                    symptom="a",
                    root_cause="bom in header",
                    fix="open with utf-8-sig",
                ),
                LessonDraft(
                    scope="s",
                    error_type="KeyError",
                    symptom="b",
                    root_cause="case of keys",
                    fix="lower-case the header names",
                ),
            ]
        )
        good, bad = (a.lesson.id for a in added if a.lesson)
        for run_id in ("bad0", "bad1", "bad2", "ok"):
            memory.record_run(run_id, scope="s")
        for n in range(3):
            memory.report_use(f"bad{n}", "reflection", [bad])
            memory.finish_run(f"bad{n}", False, rounds=3)
        memory.report_use("ok", "seed", [good])
        memory.finish_run("ok", True, rounds=1)
        report = apply_lift(memory)
        assert report.validated == (good,) and report.flagged == (bad,)
        assert memory.flagged_ids([good, bad]) == {bad} and len(memory.review_flags()) == 1
        assert memory.get(good).status == "validated" and memory.get(bad).misled == 3
        stats = {s.lesson_id: s for s in memory.lesson_lift()}
        assert (
            stats[bad].n == 3 and stats[bad].rate == 0 and stats[bad].baseline_kind == "error_type"
        )
        assert stats[bad].baseline_rate == 1.0 and stats[bad].lift == -1.0
        assert apply_lift(memory).flagged == ()  # already flagged
