"""The uncertain band of consolidation (retrospectives.judge + link): who is asked, what a
verdict does, the model judge's call, and a real pass with a model judging the band."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agent.app.cli_retro import retro_app
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM
from memory.embeddings import HashEmbedder
from memory.store import Memory
from memory.types import LessonDraft, LessonFilter
from retrospectives.consolidate import ConsolidationConfig, Consolidator, consolidate
from retrospectives.judge import ModelPairJudge, ScriptedPairJudge
from retrospectives.link import LinkConfig, linked_clusters

# Cosine only (no word overlap), so each pair's score is the cosine of its vectors.
CFG = LinkConfig(threshold=0.35, lexical_weight=0.0, band_low=0.10, band_high=0.60)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def at_cosine(c: float) -> np.ndarray:
    return unit(c, float(np.sqrt(1 - c * c)), 0.0)


def groups(clusters: list) -> set[frozenset[str]]:
    return {frozenset((c.leader, *c.members)) for c in clusters}


def by_label(labels: dict[str, str]) -> ScriptedPairJudge:
    return ScriptedPairJudge(lambda a, b: labels[a] == labels[b])


def test_a_same_verdict_merges_a_pair_the_scores_leave_apart() -> None:
    # a-b at 0.30: in the band, below the threshold; c is far from both (below the band).
    vecs = np.vstack([unit(1, 0, 0), at_cosine(0.30), unit(0, 0, 1)])
    texts = ["grouping commas in 1,200", "thousands separators break float()", "naive datetimes"]
    labels = dict(zip(texts, ["thousands", "thousands", "tz"], strict=True))
    ids, old = ["a", "b", "c"], [False] * 3
    assert linked_clusters(ids, old, vecs, texts, CFG) == []
    judge = by_label(labels)
    assert groups(linked_clusters(ids, old, vecs, texts, CFG, judge)) == {frozenset("ab")}
    assert judge.pairs == [(texts[0], texts[1])]  # c's pairs score below the band: not asked


def test_a_different_verdict_refuses_a_near_miss_the_scores_would_merge() -> None:
    # a-b at 0.50 (above the threshold, inside the band): two root causes that read alike;
    # a-d at 0.80 is above the band: merged without a call.
    vecs = np.vstack([unit(1, 0, 0), at_cosine(0.50), at_cosine(0.80)])
    vecs[2] = unit(0.80, -0.6, 0)
    texts = ["comma groups thousands", "comma is the decimal mark", "strip grouping commas"]
    labels = dict(zip(texts, ["thousands", "decimal", "thousands"], strict=True))
    ids, old = ["a", "b", "d"], [False] * 3
    # Without a judge the near-miss joins (average linkage: a-b 0.5, b-d ~0.1 -> 0.3 < 0.35,
    # so a and d pair first and b stays out); with the judge b can never pair with a.
    plain = linked_clusters(["a", "b"], [False, False], vecs[:2], texts[:2], CFG)
    assert groups(plain) == {frozenset("ab")}
    judge = by_label(labels)
    judged = linked_clusters(ids, old, vecs, texts, CFG, judge)
    assert groups(judged) == {frozenset("ad")}
    assert set(judge.pairs) == {(texts[0], texts[1])}  # a-d (0.8) and b-d (~0.1) not asked


def test_no_verdict_leaves_the_score() -> None:
    vecs = np.vstack([unit(1, 0, 0), at_cosine(0.50)])
    judge = ScriptedPairJudge(lambda a, b: None)
    assert groups(linked_clusters(["a", "b"], [False] * 2, vecs, ["x", "y"], CFG, judge)) == {
        frozenset("ab")
    }
    assert judge.asked == 1


def test_at_most_judge_per_lesson_pairs_per_new_lesson_best_first() -> None:
    # Four old lessons in the band around one new lesson, each on its own axis.
    cosines = [0.55, 0.45, 0.40, 0.30]
    vecs = np.zeros((5, 5), dtype=np.float32)
    vecs[0, 0] = 1.0
    for k, c in enumerate(cosines, 1):
        vecs[k, 0], vecs[k, k] = c, np.sqrt(1 - c * c)
    texts = ["new", "o1", "o2", "o3", "o4"]
    judge = ScriptedPairJudge(lambda a, b: False)
    cfg = LinkConfig(threshold=0.35, lexical_weight=0.0, judge_per_lesson=2)
    out = linked_clusters(texts, [False, True, True, True, True], vecs, texts, cfg, judge)
    assert judge.pairs == [("new", "o1"), ("new", "o2")]  # the two best, then the cap
    # Both asked pairs are vetoed; the best unasked one above the threshold still joins.
    assert groups(out) == {frozenset(("new", "o3"))}


def test_the_model_judge_asks_one_structured_call_per_pair() -> None:
    llm = ScriptedLLM(['{"same": true}', '{"same": false}', "no idea", "still no idea"])
    judge = ModelPairJudge(llm)
    assert judge.same_cause([("grouping commas", "thousands separators")]) == [True]
    assert judge.same_cause([("decimal comma", "grouping commas")]) == [False]
    assert judge.asked == 2 and judge.usage.calls == 2
    user = llm.calls[0].messages[-1].content
    assert "grouping commas" in user and "thousands separators" in user
    assert "root cause" in llm.calls[0].system
    # Output that never parses is no verdict (the pair keeps its score), not an error.
    assert judge.same_cause([("a b c", "d e f")]) == [None]


def _draft(error_type: str, cause: str, fix: str) -> LessonDraft:
    return LessonDraft(scope="s", error_type=error_type, symptom=f"{error_type} in a run",
                       root_cause=cause, fix=fix)  # fmt: skip


DRAFTS = [
    _draft("ValueError", "float() fails on '1,299.99': digit grouping", "delete the ',' marks"),
    _draft(
        "check_failed",
        "totals of 2.0 for 2,450: the number is split at its group mark",
        "remove thousands separators before conversion",
    ),  # fmt: skip
    _draft(
        "ValueError",
        "sensor readings like 21,4 use a comma for the fraction",
        "turn the comma into a point",
    ),  # fmt: skip
    _draft(
        "check_failed",
        "5,12 became 512 because the decimal comma was deleted",
        "convert ',' to '.' instead of deleting it",
    ),  # fmt: skip
]
LABELS = ["thousands", "thousands", "decimal", "decimal"]


def _model_reply(messages: list[Message]) -> str:
    text = messages[-1].content
    first, second = text.split("Lesson B:")
    label = {d.root_cause: lab for d, lab in zip(DRAFTS, LABELS, strict=True)}
    same = {lab for cause, lab in label.items() if cause in first} == {
        lab for cause, lab in label.items() if cause in second
    }
    return json.dumps({"same": same})


def test_a_pass_with_a_model_judging_every_pair_merges_by_root_cause() -> None:
    everything = ConsolidationConfig(judge_uncertain=True, band_low=0.0, band_high=1.0)
    # Canonicals: the model's output never parses, so they are written deterministically.
    llm = ScriptedLLM.by_system(
        {"You decide whether": [_model_reply] * 20, "You merge lessons": ["not json"] * 20}
    )
    with Memory.in_memory(dedup_similarity=1.01) as memory:
        results = memory.add_many(DRAFTS)
        label_of = {r.lesson.id: lab for r, lab in zip(results, LABELS, strict=True) if r.lesson}
        runner = Consolidator(memory, llm=llm, config=everything)
        assert isinstance(runner.judge, ModelPairJudge)
        report = runner.run()
        assert report.judged >= 2 and report.usage.calls >= report.judged
        canonicals = [les for les in memory.list_lessons(LessonFilter(limit=10)).items
                      if les.merged_from]  # fmt: skip
        merged = sorted(sorted(label_of[i] for i in les.merged_from) for les in canonicals)
        assert merged == [["decimal", "decimal"], ["thousands", "thousands"]]


def test_without_a_model_or_the_flag_there_is_no_judge() -> None:
    with Memory.in_memory(dedup_similarity=1.01) as memory:
        flag = ConsolidationConfig(judge_uncertain=True)
        assert Consolidator(memory, llm=None, config=flag).judge is None
        assert Consolidator(memory, llm=ScriptedLLM([]), config=ConsolidationConfig()).judge is None
        memory.add_many(DRAFTS)
        assert consolidate(memory, llm=None).judged == 0


@pytest.mark.parametrize("low,high", [(0.7, 0.6)])
def test_an_inverted_band_asks_nobody(low: float, high: float) -> None:
    judge = ScriptedPairJudge(lambda a, b: True)
    vecs = np.vstack([unit(1, 0, 0), at_cosine(0.65)])
    cfg = LinkConfig(threshold=0.35, lexical_weight=0.0, band_low=low, band_high=high)
    linked_clusters(["a", "b"], [False] * 2, vecs, ["x", "y"], cfg, judge)
    assert judge.asked == 0


def test_the_cli_judge_flag_asks_the_model_about_the_band(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The decimal-comma pair scores ~0.11 with the hashing embedder: in the band, no merge.
    path = tmp_path / "mem"
    with Memory.open(str(path), embedder=HashEmbedder(), dedup_similarity=1.01) as memory:
        memory.add_many(DRAFTS)
    script = tmp_path / "replies.json"
    replies = {"You decide whether": ['{"same": true}'], "You merge lessons": ["not json"] * 3}
    script.write_text(json.dumps(replies))
    monkeypatch.setenv("LESSONLOOP_MEMORY", str(path))
    monkeypatch.setenv("LESSONLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LESSONLOOP_MODEL", f"scripted:{script}")
    obj = {"embedder": HashEmbedder()}
    plain = CliRunner().invoke(retro_app, obj=obj, args=["consolidate", "--no-model", "--json"])
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.output)["merges"] == [] and json.loads(plain.output)["judged"] == 0
    full = ["consolidate", "--full", "--judge", "--json"]
    judged = CliRunner().invoke(retro_app, obj=obj, args=full)
    assert judged.exit_code == 0, judged.output
    report = json.loads(judged.output)
    assert report["judged"] == 1 and len(report["merges"]) == 1
    assert len(report["merges"][0]["member_ids"]) == 2
