"""Scope isolation: a lesson of one scope is never recalled, listed, deduplicated into,
merged with, or exported into another scope (contract stores: SQLite + embedded chromadb,
PostgreSQL + a Chroma server).

Every store holds the same lesson text in two scopes (and in the shared "global" scope),
so only the scope can keep them apart: a similarity cut-off of -1 makes every lesson of
the asked scope a hit, and nothing of another scope may come with them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_servers import StoreSpec

from agent.container import Limits
from agent.llm.scripted import ScriptedLLM
from agent.loop import ReflectiveAgent
from agent.sandbox import Sandbox
from memory import HashEmbedder, LessonDraft, LessonFilter, LessonQuery, Memory
from memory.export import export_lessons, import_lessons
from memory.seed import seed_lessons
from retrospectives.consolidate import ConsolidationConfig, consolidate, undo
from tests.helpers import GEN, GOOD, ONE_DRAW, REFINE, WRONG, code, fix, make_task

A, B, GLOBAL = "team-a", "team-b", "global"
TEXTS = (
    ("amount strings carry a dollar currency sign", "strip the dollar sign before float"),
    ("amount strings carry a dollar currency sign prefix", "strip the dollar sign before float"),
    ("the amount strings carry a dollar currency sign", "use Decimal after removing the sign"),
)
QUERY = "ValueError: could not convert string to float: '$1,200' amount currency sign"
SEED_FIELDS = {"scope", "error_type", "symptom", "root_cause", "fix", "applies_when"}
ALL = LessonFilter(status=("candidate", "validated", "deprecated", "merged"), limit=1000)


def draft(scope: str, root: str, fix_text: str) -> LessonDraft:
    return LessonDraft(
        scope=scope,
        error_type="runtime_error",
        symptom=f"ValueError: could not convert string to float: {root}",
        root_cause=root,
        fix=fix_text,
        applies_when="parsing money columns",
    )


@pytest.fixture
def twins(spec: StoreSpec) -> Iterator[Memory]:
    """The three lessons in each of A, B and global; write-time dedup off."""
    with spec.open(dedup_similarity=1.01, min_similarity=-1.0) as memory:
        for scope in (A, B, GLOBAL):
            memory.add_many([draft(scope, r, f) for r, f in TEXTS])
        yield memory


def scopes(memory: Memory, where: LessonFilter = ALL) -> dict[str, str]:
    return {x.id: x.scope for x in memory.list_lessons(where).items}


@pytest.mark.parametrize("stage", ["seed", "reflection"])
def test_recall_returns_only_the_asked_scope(twins: Memory, stage: str) -> None:
    for scope in (A, B):
        query = LessonQuery(text=QUERY, scope=scope, stage=stage, limit=50, token_budget=10_000)
        hits = twins.recall(query)
        assert hits and {h.lesson.scope for h in hits} == {scope}
        # Twins of identical text are dropped as near-duplicates of each other, so either
        # copy may come back; never the other team's.
        shared = twins.recall(query.model_copy(update={"include_global": True}))
        assert shared and {h.lesson.scope for h in shared} <= {scope, GLOBAL}
    alone = LessonQuery(text=QUERY, scope="team-c", stage=stage, include_global=True)
    assert {h.lesson.scope for h in twins.recall(alone)} == {GLOBAL}
    nobody = twins.recall(LessonQuery(text=QUERY, scope="team-c", stage=stage))
    assert nobody == []


def test_listing_a_scope_lists_only_it(twins: Memory) -> None:
    for scope in (A, B, GLOBAL):
        page = twins.list_lessons(ALL.model_copy(update={"scope": scope}))
        assert page.total == 3 and {x.scope for x in page.items} == {scope}
    assert twins.list_lessons(ALL).total == 9  # no scope given: the curator sees all


def test_dedup_never_folds_into_another_scope(spec: StoreSpec) -> None:
    with spec.open() as memory:
        first = memory.add(draft(A, *TEXTS[0]))
        again = memory.add(draft(B, *TEXTS[0]))
        same = memory.add(draft(A, *TEXTS[0]))
        assert first.action == "created" and again.action == "created"
        assert same.action == "merged_duplicate" and same.lesson is not None
        assert first.lesson is not None and same.lesson.id == first.lesson.id
        # A seed record that names its scope keeps it (the default scope is for the others),
        # and folds only into its own scope's twin.
        record = draft(B, *TEXTS[0]).model_dump(include=SEED_FIELDS)
        report = seed_lessons(memory, [json.dumps(record)], scope=A)
        assert again.lesson is not None and report.lines[0].lesson_id == again.lesson.id


def test_consolidation_merges_within_a_scope_and_undo_restores_it(twins: Memory) -> None:
    before = scopes(twins)
    report = consolidate(twins, llm=None, config=ConsolidationConfig(threshold=0.6))
    after = scopes(twins)
    merged_scopes = []
    for merge in report.merges:
        members = {after[i] for i in (*merge.member_ids, merge.canonical_id)}
        assert len(members) == 1, f"merge {merge.id} spans scopes {members}"
        merged_scopes.append(members.pop())
    assert sorted(merged_scopes) == sorted([A, B, GLOBAL])  # each scope merged on its own
    for scope in (A, B):
        hits = twins.recall(LessonQuery(text=QUERY, scope=scope, limit=50))
        assert hits and {h.lesson.scope for h in hits} == {scope}
    for merge in report.merges:
        undo(twins, merge.id)
    assert scopes(twins) == before


def test_export_of_a_scope_holds_only_it_and_imports_as_it(
    twins: Memory, spec: StoreSpec, tmp_path: Path
) -> None:
    out = io.StringIO()
    assert export_lessons(twins, out, scope=A) == 3
    lines = out.getvalue().splitlines()
    assert {json.loads(line)["scope"] for line in lines[1:]} == {A}
    with Memory.open(str(tmp_path / "other"), embedder=HashEmbedder()) as other:
        report = import_lessons(other, lines)
        assert report.ok and len(report.imported) == 3
        assert set(scopes(other).values()) == {A}


def test_a_run_recalls_only_its_own_scope_at_seed_and_reflection(tmp_path: Path) -> None:
    """The loop (real sandbox, scripted model) in scope A; B holds the same lessons."""
    with Memory.open(
        str(tmp_path / "store"), embedder=HashEmbedder(), min_similarity=-1.0
    ) as memory:
        others = memory.add_many([loop_draft(B, i) for i in range(3)])
        (own,) = memory.add_many([loop_draft(A, 0)])
        llm = ScriptedLLM.by_system({GEN: [code(WRONG)] * 2, REFINE: [fix(GOOD)]})
        agent = ReflectiveAgent(
            llm,
            recall=memory,
            sandbox=Sandbox(Limits(cpu_s=10)),
            config=ONE_DRAW,
        )
        task = make_task(tmp_path).model_copy(update={"scope": A})
        result = agent.run(task)
        assert result.passed and len(result.rounds) == 2
        assert own.lesson is not None
        assert result.recalled_lesson_ids == (own.lesson.id,)
        assert {u.stage for u in memory.uses(own.lesson.id)} == {"seed", "reflection"}
        for other in others:
            assert other.lesson is not None and memory.uses(other.lesson.id) == []


def loop_draft(scope: str, n: int) -> LessonDraft:
    return LessonDraft(
        scope=scope,
        error_type="check_failed",
        symptom=f"check failed: AssertionError expected 42 in out.json (variant {n})",
        root_cause="the program wrote the wrong number to out.json",
        fix="write 42 to out.json with json.dump",
    )
