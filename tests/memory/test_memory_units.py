"""Pure unit tests: rendering, token estimate, hashing embedder, URL handling, ranking."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory import HashEmbedder, Lesson, LessonQuery, ScoredLesson, estimate_tokens, render_lessons
from memory.db import sql_url
from memory.embeddings import Embedder, MiniLMEmbedder, resolve_embedder
from memory.errors import MemoryConfigError
from memory.ranking import RecallConfig, score, use_record
from memory.recall import scopes_of
from memory.render import HEADER

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def lesson(**overrides: object) -> Lesson:
    fields: dict[str, object] = {
        "id": "les_1",
        "scope": "demo",
        "error_type": "runtime_error",
        "symptom": "ValueError: could not convert\n string to float",
        "root_cause": "currency symbols",
        "fix": "strip '$' and ','",
        "applies_when": "money columns",
        "created_at": NOW,
        "updated_at": NOW,
    }
    fields.update(overrides)
    return Lesson.model_validate(fields)


def test_render_is_structured_and_hedged() -> None:
    block = render_lessons(
        [
            ScoredLesson(lesson=lesson(), similarity=0.8, score=0.9),
            ScoredLesson(lesson=lesson(id="les_2", applies_when=""), similarity=0.7, score=0.7),
        ]
    )
    assert block.splitlines()[0] == HEADER and "may not apply" in HEADER
    assert "1. [runtime_error] Symptom: ValueError: could not convert string to float" in block
    assert "   Root cause: currency symbols" in block
    assert "   Fix: strip '$' and ','" in block
    assert "   Applies when: money columns" in block
    assert block.count("Applies when") == 1
    assert render_lessons([]) == ""


def test_a_block_over_the_budget_clips_long_fields_the_fix_last() -> None:
    long = lesson(
        symptom="ValueError: could not convert '$1' (in the input: " + "'$9,9.9', " * 40 + ")",
        root_cause="amounts carry currency symbols and thousands separators " * 3,
        fix="strip '$' and ',' before float(). verified change: replace `float(v)` with "
        "`float(v.replace('$', '').replace(',', ''))`",
        applies_when="money columns exported from spreadsheets " * 4,
    )
    scored = [ScoredLesson(lesson=long, similarity=0.8, score=0.9)]
    whole = render_lessons(scored)
    assert render_lessons(scored, estimate_tokens(whole)) == whole  # it fits: untouched
    for budget in (150, 100, 60):
        block = render_lessons(scored, budget)
        assert estimate_tokens(block) <= budget and block.startswith(HEADER)
        assert "Symptom: ValueError" in block and "…" in block
    # At 150 tokens the symptom's evidence goes first; the fix and its change stay whole.
    assert "Fix: " + long.fix in render_lessons(scored, 150)
    assert "'$9,9.9', " * 40 not in render_lessons(scored, 150)


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    emb = HashEmbedder(dim=64)
    a, b, empty = emb.embed(["Missing BOM in CSV", "missing bom in csv", ""])
    assert a == b == HashEmbedder(dim=64).embed(["missing BOM in csv"])[0]
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-9)
    assert math.isclose(sum(x * x for x in empty), 1.0)
    assert isinstance(emb, Embedder) and isinstance(MiniLMEmbedder(), Embedder)
    assert emb.model_id == "hash-bow-64"


def test_resolve_embedder_from_a_setting() -> None:
    assert resolve_embedder("hash").model_id == "hash-bow-256"
    assert resolve_embedder("hash:64").dim == 64
    assert isinstance(resolve_embedder("minilm"), MiniLMEmbedder)  # lazy: no model loaded
    for bad in ("bert", "hash:x", "minilm:3"):
        with pytest.raises(MemoryConfigError):
            resolve_embedder(bad)


def test_lift_and_score_order_equally_similar_lessons() -> None:
    cfg = RecallConfig(min_similarity=0.4)
    fresh, old = lesson(), lesson(updated_at=NOW - timedelta(days=365))
    helped, misled = lesson(helped=5), lesson(misled=5)
    assert use_record(lesson()) == 0 and use_record(helped) > 0 > use_record(misled)
    assert score(0.6, helped, cfg, NOW) > score(0.6, fresh, cfg, NOW) > score(0.6, misled, cfg, NOW)
    assert score(0.6, fresh, cfg, NOW) > score(0.6, old, cfg, NOW)
    # similarity dominates: a much better match beats a proven but weaker one
    assert score(0.8, fresh, cfg, NOW) > score(
        0.6, helped.model_copy(update={"status": "validated"}), cfg, NOW
    )


def test_scopes_of() -> None:
    q = LessonQuery(text="x", scope="a", include_global=True, error_types=("timeout",))
    assert scopes_of(q) == ["a", "global"]
    assert scopes_of(q.model_copy(update={"include_global": False})) == ["a"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgres://u@h/db", "postgresql+psycopg://u@h/db"),
        ("sqlite:///x.db", "sqlite:///x.db"),
    ],
)
def test_sql_url(given: str, expected: str) -> None:
    assert sql_url(given) == expected


def test_recall_looks_past_deprecated_lessons_crowding_the_pool() -> None:
    from memory import LessonDraft, Memory

    memory = Memory.in_memory(candidate_pool=2)
    try:
        ids = []
        for extra in ("kilo lima mike", "kilo lima", "kilo"):
            d = LessonDraft(
                error_type="runtime_error",
                symptom=f"oscar papa quebec {extra}",
                root_cause=f"romeo {extra} {len(ids)}",
                fix=f"sierra{len(ids)}",
            )
            result = memory.add(d)
            assert result.lesson is not None
            ids.append(result.lesson.id)
        for lesson_id in ids[:2]:  # the two best matches are deprecated
            memory.set_status(lesson_id, "deprecated")
        q = LessonQuery(text="oscar papa quebec kilo lima mike", min_similarity=0.1)
        assert [s.lesson.id for s in memory.recall(q)] == [ids[2]]
    finally:
        memory.close()


def test_the_lesson_declarations_do_not_drift_apart() -> None:
    # The text fields are declared once (LessonText) for drafts and merge plans; a stored
    # lesson, its export line and its SQL row declare them again in their own order.
    from memory.export import LessonRecord
    from memory.merges import MergePlan
    from memory.schema import LessonRow
    from memory.seed import SeedRecord
    from memory.types import LessonDraft, LessonText, MergedCounts
    from retrospectives.canonical import Canonical, CanonicalAnswer

    text = set(LessonText.model_fields)
    assert text == {"symptom", "root_cause", "fix", "applies_when"}
    for model in (LessonDraft, MergePlan, CanonicalAnswer):
        assert issubclass(model, LessonText)
    # What a merge carries over is declared once for the consolidation and the memory.
    for model in (Canonical, MergePlan):
        assert issubclass(model, MergedCounts)
    stored = set(Lesson.model_fields)
    assert text < stored
    assert set(MergedCounts.model_fields) < stored
    assert set(LessonRecord.model_fields) == stored  # the export holds every lesson field
    assert stored < set(LessonRow.model_fields)  # the row adds vectors and index state
    assert set(LessonRow.model_fields) - stored == {"dedup_vector", "index_state"}
    # A seed line is a draft's text with its type, and optionally scope and status.
    assert set(SeedRecord.model_fields) == text | {"error_type", "scope", "status"}
    for name in ("error_type", "scope"):
        bounds = [
            m.metadata for m in (SeedRecord.model_fields[name], LessonDraft.model_fields[name])
        ]
        assert bounds[0] == bounds[1], name  # the same bounds as every other write
