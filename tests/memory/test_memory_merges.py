"""Contract suite, continued: merges, undo, root-cause vectors, the lease, review flags.

Every test runs against every store kind (SQLite + embedded chromadb; PostgreSQL + a Chroma
server started by the fixtures). Plans are written by hand here: what to merge is
consolidation's decision (tests/retro), how a merge is stored is the memory's contract.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from memory_servers import StoreSpec

from memory import (
    ALL_TYPES,
    HashEmbedder,
    Lesson,
    LessonDraft,
    LessonNotFoundError,
    LessonQuery,
    Memory,
    MemoryConfigError,
    faults,
)
from memory.lease import LeaseLostError
from memory.merges import MergeConflictError, MergeNotFoundError, MergePlan
from memory.migrate import SCHEMA_VERSION


def draft(n: int, *, error_type: str = "ValueError") -> LessonDraft:
    return LessonDraft(
        error_type=error_type,
        symptom=f"alpha{n} bravo{n} charlie{n} failed",
        root_cause=f"delta{n} echo{n} foxtrot{n}",
        fix=f"golf{n} hotel{n} india{n}",
    )


def add(store: Memory, *ns: int) -> list[Lesson]:
    out = []
    for n in ns:
        lesson = store.add(draft(n)).lesson
        assert lesson is not None
        out.append(lesson)
    return out


def plan(
    lessons: Sequence[Lesson], *, canonical: Lesson | None = None, text: int = 99
) -> MergePlan:
    """Merge `lessons` into a new canonical (or into `canonical`) whose words are `text`."""
    touched = [*([canonical] if canonical else []), *lessons]
    return MergePlan(
        scope="default",
        error_type="ValueError",
        canonical_id=canonical.id if canonical else None,
        leader_id=touched[0].id,
        member_ids=tuple(x.id for x in lessons),
        expected={x.id: x.updated_at for x in touched},
        symptom=f"alpha{text} bravo{text} charlie{text} failed",
        root_cause=f"delta{text} echo{text} foxtrot{text}",
        fix=f"golf{text} hotel{text} india{text}",
        applies_when="",
        status="candidate",
        seen=sum(x.seen for x in touched),
        recalled=0,
        helped=0,
        misled=0,
        evidence=(),
        merged_from=tuple(x.id for x in touched if canonical is None or x.id != canonical.id),
        written_by="test",
    )


def found(store: Memory, n: int) -> list[str]:
    query = LessonQuery(text=f"alpha{n} bravo{n} charlie{n} delta{n} echo{n}")
    return [s.lesson.id for s in store.recall(query)]


def test_a_merge_writes_sql_and_index_together(store: Memory) -> None:
    a, b = add(store, 1, 2)
    store.embed_root_causes()
    record = store.apply_merge(plan([a, b]))
    assert record is not None and record.created_canonical and record.written_by == "test"
    canonical = store.get(record.canonical_id)
    assert canonical.merged_from == (a.id, b.id) and canonical.seen == 2
    for member in (a, b):
        merged = store.get(member.id)
        assert (merged.status, merged.merged_into) == ("merged", canonical.id)
    assert store.check().clean  # the index follows SQL: no pending row, no drift
    assert found(store, 99) == [canonical.id]
    assert found(store, 1) == [] and found(store, 2) == []  # merged lessons are not recalled
    assert [m.id for m in store.list_merges()] == [record.id]
    # The canonical stands for its cluster in later passes: processed, with the leader's vector.
    assert store.unprocessed_count() == 0


def test_a_stale_plan_changes_nothing(store: Memory) -> None:
    a, b = add(store, 1, 2)
    stale = plan([a, b])
    store.update(a.id, fix="a person edited this fix")
    assert store.apply_merge(stale) is None
    assert store.get(b.id).status == "candidate" and store.list_merges() == []
    assert store.check().clean


def test_merges_of_one_call_commit_together_and_a_conflict_skips_only_its_plan(
    store: Memory,
) -> None:
    a, b, c, d, e = add(store, 1, 2, 3, 4, 5)
    store.embed_root_causes()
    # The second plan takes `b` again: the first merge of the batch changed it, so the
    # second plan's compare-and-set fails; the third is written.
    first, clash, third = store.apply_merges(
        [plan([a, b], text=97), plan([b, c], text=98), plan([d, e], text=99)]
    )
    assert first is not None and clash is None and third is not None
    assert store.get(c.id).status == "candidate"
    assert {store.get(x.id).merged_into for x in (a, b)} == {first.canonical_id}
    assert {store.get(x.id).merged_into for x in (d, e)} == {third.canonical_id}
    assert {m.id for m in store.list_merges()} == {first.id, third.id}
    assert store.check().clean and found(store, 97) == [first.canonical_id]
    assert store.unprocessed_count() == 1  # c only
    store.undo_merge(third.id)
    assert store.get(d.id).status == "candidate" and store.check().clean


def test_undo_restores_exactly_and_only_once(store: Memory) -> None:
    a, b = add(store, 1, 2)
    before = {x.id: store.get(x.id) for x in (a, b)}
    record = store.apply_merge(plan([a, b]))
    assert record is not None
    undone = store.undo_merge(record.id)
    assert undone.undone_at is not None
    assert {x.id: store.get(x.id) for x in (a, b)} == before
    with pytest.raises(LessonNotFoundError):
        store.get(record.canonical_id)
    assert store.check().clean
    assert found(store, 1) == [a.id] and found(store, 99) == []
    with pytest.raises(MergeConflictError, match="already undone"):
        store.undo_merge(record.id)
    with pytest.raises(MergeNotFoundError):
        store.undo_merge("mrg_missing")
    # A member's snapshot leaves out its dedup vector (the merge never changes it): it is
    # still there after the undo, so the same lesson written again is a duplicate of it.
    assert store.add(draft(1)).action == "merged_duplicate"


def test_a_canonical_used_since_the_merge_is_not_undone(store: Memory) -> None:
    """Undo restores the members' counters from before the merge: a canonical that runs used
    since would lose that record (its use rows left pointing at a deleted lesson)."""
    a, b = add(store, 1, 2)
    record = store.apply_merge(plan([a, b]))
    assert record is not None
    store.record_run("r1")
    store.report_use("r1", "seed", [record.canonical_id])
    store.finish_run("r1", True)
    with pytest.raises(MergeConflictError, match=r"used by runs after .*recalled 0 -> 1"):
        store.undo_merge(record.id)
    assert store.get(record.canonical_id).helped == 1 and store.get(a.id).status == "merged"
    assert [u.outcome for u in store.uses(record.canonical_id)] == ["passed"]
    assert store.check().clean


def test_a_member_counted_since_the_merge_is_not_undone(store: Memory) -> None:
    """A run given a member before the merge and finished after it counts on the member:
    restoring the member's snapshot would drop that."""
    a, b = add(store, 1, 2)
    store.record_run("r1")
    store.report_use("r1", "seed", [a.id])
    record = store.apply_merge(plan([a, b]))
    assert record is not None
    store.finish_run("r1", True)
    with pytest.raises(MergeConflictError, match=f"lesson {a.id} .* counted by a run after"):
        store.undo_merge(record.id)
    assert store.get(a.id).helped == 1 and store.get(a.id).status == "merged"


def test_a_fold_into_a_canonical_is_undone_to_its_old_text(store: Memory) -> None:
    a, b, c = add(store, 1, 2, 3)
    first = store.apply_merge(plan([a, b], text=98))
    assert first is not None
    canonical = store.get(first.canonical_id)
    second = store.apply_merge(plan([c], canonical=canonical, text=97))
    assert second is not None and not second.created_canonical
    assert second.canonical_id == canonical.id and found(store, 97) == [canonical.id]
    later = f"merge {second.id} built on merge {first.id} later: undo {second.id} first"
    with pytest.raises(MergeConflictError, match=later):
        store.undo_merge(first.id)  # the later fold built on it
    store.undo_merge(second.id)
    assert store.get(canonical.id) == canonical and store.get(c.id).status == "candidate"
    assert found(store, 98) == [canonical.id] and store.check().clean


def test_a_canonical_merged_into_another_names_that_merge(store: Memory) -> None:
    a, b, x = add(store, 1, 2, 3)
    first = store.apply_merge(plan([a, b], text=98))
    assert first is not None
    second = store.apply_merge(plan([store.get(first.canonical_id), x], text=97))
    assert second is not None and second.canonical_id != first.canonical_id
    with pytest.raises(MergeConflictError, match=f"undo {second.id} first"):
        store.undo_merge(first.id)
    store.undo_merge(second.id)
    store.undo_merge(first.id)
    assert {store.get(i.id).status for i in (a, b, x)} == {"candidate"}


def test_an_edited_canonical_says_no_undo_takes_the_edit_back(store: Memory) -> None:
    a, b = add(store, 1, 2)
    record = store.apply_merge(plan([a, b], text=98))
    assert record is not None
    store.update(record.canonical_id, applies_when="when it applies")
    with pytest.raises(MergeConflictError, match="was edited or seen again after merge"):
        store.undo_merge(record.id)
    assert store.get(a.id).status == "merged"  # nothing was undone


def test_a_crash_between_merge_commit_and_index_is_repaired(spec: StoreSpec) -> None:
    class Crash(Exception):
        pass

    def crash(ids: Sequence[str]) -> None:
        raise Crash(ids)

    with spec.open() as setup:
        a, b = add(setup, 1, 2)
    with spec.open(after_sql_commit=crash) as crashing, pytest.raises(Crash):
        crashing.apply_merge(plan([a, b]))
    with spec.open() as store:
        (record,) = store.list_merges()  # SQL holds the whole merge
        report = store.check()
        assert report.pending == (record.canonical_id,)
        assert report.metadata_drift == ()  # members: the index holds no status
        store.check(repair=True)
        assert store.check().clean and found(store, 99) == [record.canonical_id]


def test_root_cause_vectors_make_passes_incremental(store: Memory) -> None:
    a, b = add(store, 1, 2)
    store.add(draft(3, error_type="KeyError"))
    assert store.unprocessed_count() == 3
    assert store.embed_root_causes() == 3 and store.embed_root_causes() == 0
    assert store.consolidation_buckets() == [("default", "KeyError"), ("default", "ValueError")]
    vectors = store.bucket_vectors(("default", "ValueError"))
    assert vectors.new_ids == [a.id, b.id] and vectors.new.shape == (2, 256)
    assert vectors.old_ids == [] and vectors.old.shape == (0, 256)
    store.mark_processed([a.id])
    vectors = store.bucket_vectors(("default", "ValueError"))
    assert (vectors.old_ids, vectors.new_ids) == ([a.id], [b.id])
    assert store.unprocessed_count() == 2
    assert store.bucket_vectors(("default", "ValueError"), full=True).new_ids == [a.id, b.id]
    fixes = store.fix_vectors([a.id, "les_missing"])
    assert list(fixes) == [a.id] and len(fixes[a.id]) == 256


def test_a_scope_is_one_bucket_across_error_types(store: Memory) -> None:
    a, b = add(store, 1, 2)
    c = store.add(draft(3, error_type="KeyError")).lesson
    assert c is not None
    store.embed_root_causes()
    assert store.consolidation_buckets(across_types=True) == [("default", ALL_TYPES)]
    vectors = store.bucket_vectors(("default", ALL_TYPES))
    assert vectors.new_ids == [a.id, b.id, c.id] and vectors.new.shape == (3, 256)
    store.mark_processed([a.id, b.id, c.id])
    assert store.consolidation_buckets(across_types=True) == []
    assert store.consolidation_buckets(full=True, across_types=True) == [("default", ALL_TYPES)]
    assert store.cause_texts([c.id, a.id]) == [
        "delta3 echo3 foxtrot3 golf3 hotel3 india3",
        "delta1 echo1 foxtrot1 golf1 hotel1 india1",
    ]


def test_the_lease_admits_one_holder(store: Memory) -> None:
    held = store.acquire_lease("consolidation", "one", ttl_s=60)
    assert held is not None and store.acquire_lease("consolidation", "two", ttl_s=60) is None
    holder = store.lease_holder("consolidation")
    assert holder is not None and holder.holder == "one"
    renewed = store.renew_lease(held, ttl_s=120)
    assert renewed.expires_at > held.expires_at
    store.release_lease(renewed)
    assert store.lease_holder("consolidation") is None
    taken = store.acquire_lease("consolidation", "two", ttl_s=60)
    assert taken is not None
    with pytest.raises(LeaseLostError):
        store.renew_lease(held, ttl_s=60)


def test_review_flags_are_stored_and_cleared(spec: StoreSpec) -> None:
    with spec.open() as store:
        a, b = add(store, 1, 2)
        assert store.flag_for_review(a.id, "recalled into 3 failing runs")
        assert not store.flag_for_review(a.id, "again")  # flagged once
    with spec.open() as store:
        (flag,) = store.review_flags()
        assert (flag.lesson_id, flag.reason) == (a.id, "recalled into 3 failing runs")
        assert store.flagged_ids([a.id, b.id]) == {a.id}
        assert store.clear_review_flag(a.id) and not store.clear_review_flag(a.id)
        assert store.review_flags() == [] and store.flagged_ids([a.id]) == set()


def test_lift_statistics_come_from_runs_and_uses(store: Memory) -> None:
    (a,) = add(store, 1)
    for n, passed in enumerate((True, True, False)):
        store.record_run(f"run-{n}")
        store.report_use(f"run-{n}", "seed", [a.id])
        store.finish_run(f"run-{n}", passed)
    (lift,) = store.lesson_lift([a.id])
    assert (lift.n, lift.passed) == (3, 2) and lift.low < 2 / 3 < lift.high


def test_lift_baselines_of_lessons_given_to_runs_of_other_scopes(store: Memory) -> None:
    """A 'global' lesson's baseline is the runs of the scopes it was given in; a lesson given
    to a run of another scope counts that run in its n, never against its own scope's
    baseline (which once went negative: baseline_n -1, lift +1.00 for a lesson 0 of 2)."""
    shared = store.add(draft(1).model_copy(update={"scope": "global"})).lesson
    local = store.add(draft(2)).lesson
    assert shared is not None and local is not None
    runs = {
        "b0": ("b", [shared.id], False),
        "b1": ("b", [shared.id], False),
        "b2": ("b", [shared.id], True),
        "b3": ("b", [], True),
        "d0": ("default", [], True),
        "c0": ("c", [local.id], False),
        "c1": ("c", [local.id], False),
    }
    for run_id, (scope, given, passed) in runs.items():
        store.record_run(run_id, scope=scope)
        store.report_use(run_id, "seed", given)
        store.finish_run(run_id, passed)
    lifts = {x.lesson_id: x for x in store.lesson_lift([shared.id, local.id])}
    g, d = lifts[shared.id], lifts[local.id]
    assert (g.n, g.passed, g.baseline_kind, g.baseline_n, g.baseline_passed) == (
        *(3, 1, "scope"),
        *(1, 1),
    )
    assert g.lift == pytest.approx(1 / 3 - 1)
    assert (d.n, d.passed, d.baseline_kind, d.baseline_n, d.baseline_passed) == (
        *(2, 0, "scope"),
        *(1, 1),
    )
    assert d.lift == pytest.approx(-1.0)


def test_the_schema_version_is_recorded_and_a_newer_one_refused(spec: StoreSpec) -> None:
    with spec.open() as store:
        assert store.schema_version() == SCHEMA_VERSION
        faults.record_schema_version(store, SCHEMA_VERSION + 1)
    with pytest.raises(MemoryConfigError, match="newer than this lessonloop knows"):
        spec.open(HashEmbedder())


def test_a_root_cause_edited_while_it_is_embedded_is_embedded_again(spec: StoreSpec) -> None:
    # A curator's edit lands (from another handle, as another process) while a consolidation
    # pass embeds the old root cause: the pass must not cache the old text's vector.
    with spec.open() as store, spec.open() as other:
        (x,) = add(store, 1)
        edited = "zulu yankee xray whiskey"

        class Racing(HashEmbedder):
            fired = False

            def embed(self, texts: Sequence[str]) -> list[list[float]]:
                if not Racing.fired:
                    Racing.fired = True
                    other.update(x.id, root_cause=edited)
                return super().embed(texts)

        with spec.open(embedder=Racing()) as racing:
            racing.embed_root_causes()
        (bucket,) = store.consolidation_buckets()
        cached = store.bucket_vectors(bucket).vector(x.id)
        assert np.allclose(cached, HashEmbedder().embed([edited])[0])
