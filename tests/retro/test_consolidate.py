"""Consolidation on a real store (SQLite + chromadb, hashing embedder): merge, undo, races."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest

from agent.llm.scripted import ScriptedLLM
from memory.embeddings import HashEmbedder
from memory.export import export_lessons, import_lessons
from memory.merges import MergeConflictError, MergeNotFoundError
from memory.store import Memory
from memory.types import Lesson, LessonDraft, LessonFilter
from retrospectives.consolidate import (
    LEASE_NAME,
    ConsolidationConfig,
    Consolidator,
    consolidate,
    undo,
)
from retrospectives.errors import ConsolidationBusyError
from tests.retro.builders import MERGE_SYS

CFG = ConsolidationConfig(threshold=0.6)
CURRENCY = (
    ("amount strings carry a dollar currency sign", "strip the dollar sign before float"),
    ("amount strings carry a dollar currency sign prefix", "strip the dollar sign before float"),
    ("the amount strings carry a dollar currency sign", "use Decimal after removing the sign"),
)
BOM = ("file starts with a utf-8 byte order mark", "open the file with utf-8-sig")


def draft(root: str, fix: str, error_type: str = "ValueError", when: str = "") -> LessonDraft:
    return LessonDraft(
        scope="demo",
        error_type=error_type,
        symptom=f"{error_type}: {root}",
        root_cause=root,
        fix=fix,
        applies_when=when or f"when {fix.split()[0]} helps",
    )


@pytest.fixture
def memory() -> Iterator[Memory]:
    # Write-time dedup off: these tests are about what consolidation merges.
    with Memory.in_memory(HashEmbedder(), dedup_similarity=1.01) as m:
        yield m


def lessons(memory: Memory) -> dict[str, Lesson]:
    page = memory.list_lessons(LessonFilter(limit=1000))
    return {lesson.id: lesson for lesson in page.items}


def seed(memory: Memory, *pairs: tuple[str, str]) -> list[str]:
    results = memory.add_many([draft(r, f) for r, f in pairs])
    return [r.lesson.id for r in results if r.lesson]


def test_cluster_becomes_one_canonical_with_provenance_and_summed_counters(memory: Memory) -> None:
    ids = seed(memory, *CURRENCY, BOM)
    memory.report_use("r1", "seed", [ids[0], ids[1]])
    memory.finish_run("r1", True)
    report = consolidate(memory, llm=None, config=CFG)
    (merge,) = report.merges
    assert report.new_lessons == 4 and report.fallbacks == 1 and merge.created_canonical
    after = lessons(memory)
    canonical = after[merge.canonical_id]
    assert set(canonical.merged_from) == set(ids[:3]) and canonical.status == "candidate"
    assert canonical.recalled == 2 and canonical.helped == 2 and canonical.seen == 3
    for i in ids[:3]:
        assert after[i].status == "merged" and after[i].merged_into == canonical.id
    assert after[ids[3]].status == "candidate"  # different root cause: untouched
    assert memory.check().clean  # the index followed (canonical in, members marked merged)


def test_different_fixes_are_kept_with_their_conditions(memory: Memory) -> None:
    seed(memory, *CURRENCY)
    (merge,) = consolidate(memory, llm=None, config=CFG).merges
    fix = lessons(memory)[merge.canonical_id].fix
    assert "strip the dollar sign before float" in fix and "use Decimal" in fix
    assert fix.count("if ") == 2


def test_model_writes_the_canonical(memory: Memory) -> None:
    seed(memory, *CURRENCY[:2])
    answer = (
        '{"symptom": "ValueError converting money", "root_cause": "amounts carry a $ sign",'
        ' "fix": "strip the dollar sign before float", "applies_when": "money columns"}'
    )
    llm = ScriptedLLM.by_system({MERGE_SYS: [answer]})
    (merge,) = consolidate(memory, llm=llm, config=CFG).merges
    canonical = lessons(memory)[merge.canonical_id]
    assert merge.written_by == "model" and canonical.root_cause == "amounts carry a $ sign"
    assert "1. symptom:" in llm.calls[0].messages[-1].content


def test_a_model_that_drops_a_fix_is_overruled(memory: Memory) -> None:
    seed(memory, *CURRENCY)
    answer = (
        '{"symptom": "ValueError converting money", "root_cause": "amounts carry a $ sign",'
        ' "fix": "strip the dollar sign before float", "applies_when": "money columns"}'
    )
    llm = ScriptedLLM.by_system({MERGE_SYS: [answer]})
    (merge,) = consolidate(memory, llm=llm, config=CFG).merges
    assert merge.written_by == "model+fallback_fix"
    assert "use Decimal" in lessons(memory)[merge.canonical_id].fix


def test_invalid_model_output_falls_back(memory: Memory) -> None:
    seed(memory, *CURRENCY[:2])
    llm = ScriptedLLM.by_system({MERGE_SYS: ["nope", "still nope"]})
    report = consolidate(memory, llm=llm, config=CFG)
    assert report.merges[0].written_by == "fallback" and report.fallbacks == 1


def test_second_pass_is_a_no_op(memory: Memory) -> None:
    seed(memory, *CURRENCY, BOM)
    consolidate(memory, llm=None, config=CFG)
    before = lessons(memory)
    again = consolidate(memory, llm=None, config=CFG)
    assert again.merges == () and again.new_lessons == 0 and again.embedded == 0
    assert lessons(memory) == before


def test_undo_restores_exactly_and_is_not_redone(memory: Memory) -> None:
    seed(memory, *CURRENCY, BOM)
    original = lessons(memory)
    (merge,) = consolidate(memory, llm=None, config=CFG).merges
    record = undo(memory, merge.id)
    assert record.undone_at is not None
    assert lessons(memory) == original  # every field, timestamps included
    assert memory.check().clean
    assert consolidate(memory, llm=None, config=CFG).merges == ()  # undo sticks
    with pytest.raises(MergeConflictError):
        undo(memory, merge.id)
    with pytest.raises(MergeNotFoundError):
        undo(memory, "mrg_nope")


def test_incremental_pass_folds_newcomers_into_the_canonical(memory: Memory) -> None:
    seed(memory, *CURRENCY[:2], BOM)
    (first,) = consolidate(memory, llm=None, config=CFG).merges
    state_after_first = lessons(memory)
    (late,) = seed(memory, CURRENCY[2])
    report = consolidate(memory, llm=None, config=CFG)
    (second,) = report.merges
    assert report.new_lessons == 1  # only the newcomer was clustered
    assert second.canonical_id == first.canonical_id and not second.created_canonical
    canonical = lessons(memory)[first.canonical_id]
    assert late in canonical.merged_from and len(canonical.merged_from) == 3
    with pytest.raises(MergeConflictError):
        undo(memory, first.id)  # the later merge built on it
    undo(memory, second.id)
    assert {k: v for k, v in lessons(memory).items() if k != late} == state_after_first
    undo(memory, first.id)
    assert all(les.status == "candidate" for les in lessons(memory).values())


def test_an_edited_root_cause_is_clustered_again(memory: Memory) -> None:
    # A lesson a pass has clustered is edited into the same root cause as another: the next
    # incremental pass sees it anew (its cached vector was of the old text) and merges it.
    (currency, bom) = seed(memory, CURRENCY[0], BOM)
    assert consolidate(memory, llm=None, config=CFG).merges == ()
    memory.update(bom, root_cause=CURRENCY[1][0], fix=CURRENCY[1][1])
    report = consolidate(memory, llm=None, config=CFG)
    assert report.new_lessons == 1
    (merge,) = report.merges
    assert set(merge.member_ids) == {currency, bom}
    # An edit that leaves the clustering text alone changes nothing for the pass.
    memory.update(merge.canonical_id, applies_when="when amounts carry a '$'")
    assert consolidate(memory, llm=None, config=CFG).new_lessons == 0


def test_replacing_from_an_export_older_than_a_merge_refuses_the_merged_lessons(
    memory: Memory,
) -> None:
    seed(memory, *CURRENCY[:2], BOM)
    backup = io.StringIO()
    export_lessons(memory, backup)
    (merge,) = consolidate(memory, llm=None, config=CFG).merges
    after = lessons(memory)
    report = import_lessons(memory, io.StringIO(backup.getvalue()), replace=True)
    # The merged lessons stay merged (else each would be active beside its canonical and
    # counted twice, and the merge could not be undone); the lesson no merge took is replaced.
    assert sorted(e.line for e in report.errors) == [2, 3]
    assert all("merged into" in e.message and "--undo" in e.message for e in report.errors)
    assert len(report.replaced) == 1
    now = lessons(memory)
    assert now.keys() == after.keys()
    assert {k: v for k, v in now.items() if k not in report.replaced} == {
        k: v for k, v in after.items() if k not in report.replaced
    }
    undo(memory, merge.id)  # still undoable
    assert all(les.status == "candidate" for les in lessons(memory).values())


def test_replacing_a_canonical_from_before_a_later_fold_is_refused(memory: Memory) -> None:
    seed(memory, *CURRENCY[:2])
    (first,) = consolidate(memory, llm=None, config=CFG).merges
    backup = io.StringIO()
    export_lessons(memory, backup)
    (late,) = seed(memory, CURRENCY[2])
    (second,) = consolidate(memory, llm=None, config=CFG).merges
    assert second.canonical_id == first.canonical_id and late in second.member_ids
    before = lessons(memory)
    report = import_lessons(memory, io.StringIO(backup.getvalue()), replace=True)
    (refused,) = report.errors
    assert f"lessons {late} were merged into {first.canonical_id}" in refused.message
    assert lessons(memory)[first.canonical_id] == before[first.canonical_id]
    undo(memory, second.id)  # still undoable, then the first
    undo(memory, first.id)


def test_a_held_lease_blocks_a_second_consolidator(memory: Memory) -> None:
    seed(memory, *CURRENCY)
    consolidator = Consolidator(memory, llm=None, config=CFG)
    held = memory.acquire_lease(LEASE_NAME, "someone-else", ttl_s=60)
    assert held is not None
    # Says until when: a killed pass holds the lease until it expires.
    until = held.expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    with pytest.raises(ConsolidationBusyError, match=f"someone-else.*runs until {until}"):
        consolidator.run()
    assert memory.list_merges() == []


def test_an_expired_lease_is_taken_over(memory: Memory) -> None:
    seed(memory, *CURRENCY)
    consolidator = Consolidator(memory, llm=None, config=CFG)
    assert memory.acquire_lease(LEASE_NAME, "crashed-worker", ttl_s=0.001) is not None
    time.sleep(0.05)  # past the expiry: a pass started within the same millisecond would wait
    assert len(consolidator.run().merges) == 1


def test_a_stopped_pass_resumes_where_it_left_off(memory: Memory) -> None:
    seed(memory, *CURRENCY[:2])
    memory.add_many(
        [draft(*BOM, error_type="KeyError"), draft(BOM[0] + " again", BOM[1], "KeyError")]
    )
    calls = iter([False, False, True])  # stop after the first bucket's cluster
    first = Consolidator(memory, llm=None, config=CFG).run(should_stop=lambda: next(calls, True))
    assert first.stopped_early and len(first.merges) == 1
    second = Consolidator(memory, llm=None, config=CFG).run()
    assert len(second.merges) == 1 and second.merges[0].error_type != first.merges[0].error_type
    assert consolidate(memory, llm=None, config=CFG).merges == ()


def test_concurrent_passes_on_a_file_store_do_not_double_merge(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Memory.open(str(path), embedder=HashEmbedder(), dedup_similarity=1.01) as setup:
        setup.add_many([draft(r, f) for r, f in CURRENCY] + [draft(*BOM)])
    errors: list[BaseException] = []
    reports = []
    barrier = threading.Barrier(2)
    # Opened up front: chromadb's embedded client cannot be created from two threads at once.
    stores = [Memory.open(str(path), embedder=HashEmbedder()) for _ in range(2)]
    consolidators = [
        Consolidator(m, llm=None, config=CFG, holder=f"w{n}") for n, m in enumerate(stores)
    ]

    def worker(consolidator: Consolidator) -> None:
        barrier.wait()
        try:
            reports.append(consolidator.run())
        except ConsolidationBusyError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(c,)) for c in consolidators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in stores:
        m.close()
    with Memory.open(str(path), embedder=HashEmbedder()) as m:
        merged = [les for les in lessons(m).values() if les.status == "merged"]
        assert len(m.list_merges()) == 1 and len(merged) == 3
        assert len({les.merged_into for les in merged}) == 1
    assert len(reports) + len(errors) == 2
