"""Contract suite: every test runs against every store kind (see conftest.STORE_KINDS).

HashEmbedder keeps these fast; the thresholds that matter for real text are tested on MiniLM
in test_memory_minilm.py.
"""

from __future__ import annotations

import pytest
from memory_servers import StoreSpec

from memory import (
    EmbeddingMismatchError,
    Evidence,
    HashEmbedder,
    LessonDraft,
    LessonFilter,
    LessonNotFoundError,
    LessonQuery,
    Memory,
    MemoryConfigError,
    MemoryUsageError,
    estimate_tokens,
    faults,
    render_lessons,
)


def draft(n: int = 0, *, scope: str = "default", error_type: str = "runtime_error") -> LessonDraft:
    """Lessons whose words do not overlap between different n (HashEmbedder: cosine ~ 0)."""
    return LessonDraft(
        scope=scope,
        error_type=error_type,
        symptom=f"alpha{n} bravo{n} charlie{n} failed",
        root_cause=f"delta{n} echo{n} foxtrot{n}",
        fix=f"golf{n} hotel{n} india{n}",
        applies_when=f"juliet{n}",
    )


def query(n: int = 0, **kwargs: object) -> LessonQuery:
    return LessonQuery(text=f"alpha{n} bravo{n} charlie{n} delta{n} echo{n}", **kwargs)  # type: ignore[arg-type]


def test_add_get_roundtrip_and_reopen(spec: StoreSpec) -> None:
    memory = spec.open()
    result = memory.add(draft(1), run_id="run-1")
    memory.close()
    assert result.action == "created" and result.lesson is not None
    reopened = spec.open()
    try:
        lesson = reopened.get(result.lesson.id)
        assert lesson.root_cause == "delta1 echo1 foxtrot1"
        assert lesson.evidence == (Evidence(run_id="run-1"),)
        assert lesson.embedding_model == HashEmbedder().model_id
        assert lesson.created_at.tzinfo is not None
        assert [s.lesson.id for s in reopened.recall(query(1))] == [lesson.id]
    finally:
        reopened.close()


def test_chromadb_is_never_allowed_to_embed(store: Memory) -> None:
    # Without our refusing stub chromadb 1.x would download its default ONNX model here.
    collection = faults.raw_collection(store)
    assert collection is not None
    with pytest.raises(MemoryConfigError, match="passes its own embeddings"):
        collection.add(ids=["x"], documents=["text without a vector"])


def test_get_unknown_raises(store: Memory) -> None:
    with pytest.raises(LessonNotFoundError):
        store.get("les_missing")


def test_secrets_are_redacted_before_storage(store: Memory) -> None:
    leaked = LessonDraft(
        error_type="runtime_error",
        symptom="connect failed for postgresql://app:hunter2pass@db.internal:5432/prod",
        root_cause="OPENAI key sk-proj-abcdefghijklmnopqrstuvwxyz123456 was sent as password",
        fix="read the token from the environment",
        evidence=(Evidence(run_id="r", excerpt="Authorization: Bearer abcdef1234567890XYZ"),),
    )
    lesson = store.add(leaked).lesson
    assert lesson is not None
    stored = store.get(lesson.id)
    text = " ".join([stored.symptom, stored.root_cause, stored.evidence[0].excerpt])
    for secret in (
        "hunter2pass",
        "sk-proj-abcdefghijklmnopqrstuvwxyz123456",
        "abcdef1234567890XYZ",
    ):
        assert secret not in text
    assert "postgresql://app:[REDACTED]@db.internal:5432/prod" in stored.symptom


def test_nul_from_binary_program_output_is_stored_on_every_backend(store: Memory) -> None:
    # PostgreSQL refuses NUL in text: every write keeps it as U+FFFD (what a browser shows).
    binary = LessonDraft(
        error_type="UnicodeDecodeError",
        symptom="the program printed b'\x00\x01' raw: \x00\x01 PK",
        root_cause="a zip read\x00 as text",
        fix="open it in binary mode",
        evidence=(Evidence(run_id="r", excerpt="stdout: \x00\x00PK"),),
    )
    lesson = store.add(binary).lesson
    assert lesson is not None
    stored = store.get(lesson.id)
    assert "\x00" not in stored.symptom + stored.root_cause + stored.evidence[0].excerpt
    assert stored.root_cause == "a zip read\ufffd as text"
    edited = store.update(lesson.id, fix="open it with 'rb'\x00")
    assert edited.fix == "open it with 'rb'\ufffd"


def test_duplicate_root_cause_and_fix_merges(store: Memory) -> None:
    first = store.add(draft(1), run_id="run-a")
    again = store.add(
        draft(1).model_copy(update={"symptom": "a different symptom entirely"}), run_id="run-b"
    )
    assert first.lesson is not None and again.lesson is not None
    assert again.action == "merged_duplicate"
    assert again.lesson.id == first.lesson.id
    stored = store.get(first.lesson.id)
    assert stored.seen == 2
    assert [e.run_id for e in stored.evidence] == ["run-a", "run-b"]
    assert store.list_lessons().total == 1


def test_a_validated_draft_validates_the_candidate_it_folds_into(store: Memory) -> None:
    # A person's validated record (a seed line marked so) meeting a stored candidate, and
    # one meeting a candidate made earlier in the same batch: both end validated.
    first = store.add(draft(1))
    again = store.add(draft(1).model_copy(update={"status": "validated"}))
    batch = store.add_many([draft(2), draft(2).model_copy(update={"status": "validated"})])
    assert first.lesson is not None and again.action == "merged_duplicate"
    assert store.get(first.lesson.id).status == "validated"
    created, folded = batch
    assert created.lesson is not None and folded.action == "merged_duplicate"
    assert store.get(created.lesson.id).status == "validated"
    # A candidate draft never lowers a validated lesson.
    store.add(draft(1))
    assert store.get(first.lesson.id).status == "validated"


def test_a_deprecated_lesson_learned_again_stays_deprecated_and_is_flagged(
    store: Memory,
) -> None:
    first = store.add(draft(1), run_id="run-a").lesson
    assert first is not None
    store.set_status(first.id, "deprecated")
    assert store.review_flags() == []
    again = store.add(draft(1), run_id="run-b")
    assert again.action == "merged_duplicate" and "deprecated" in again.reason
    assert again.lesson is not None and again.lesson.id == first.id
    assert again.lesson.status == "deprecated"  # a person retired it: no run brings it back
    assert store.recall(query(1)) == []
    (flag,) = store.review_flags()
    assert flag.lesson_id == first.id
    assert "learned again by run run-b (seen 2 times)" in flag.reason
    assert f"lessonloop lessons restore {first.id}" in flag.reason
    store.add(draft(1), run_id="run-c")  # one flag; its reason names the newest sighting
    (flag,) = store.review_flags()
    assert "by run run-c (seen 3 times)" in flag.reason
    # A flag raised for another reason keeps it; the relearned note follows it.
    store.clear_review_flag(first.id)
    store.flag_for_review(first.id, "recalled in 3 failing runs of 3")
    store.add(draft(1), run_id="run-d")
    store.add(draft(1), run_id="run-e")
    (flag,) = store.review_flags()
    assert flag.reason.startswith("recalled in 3 failing runs of 3; deprecated, but learned")
    assert "by run run-e (seen 5 times)" in flag.reason and "run-d" not in flag.reason
    # An active lesson seen again raises no flag.
    other = store.add(draft(2), run_id="run-a").lesson
    assert other is not None
    assert store.add(draft(2), run_id="run-b").action == "merged_duplicate"
    assert [f.lesson_id for f in store.review_flags()] == [first.id]


def test_dedup_respects_scope_and_error_type(store: Memory) -> None:
    store.add(draft(1, scope="a"))
    assert store.add(draft(1, scope="b")).action == "created"
    assert store.add(draft(1, scope="a", error_type="timeout")).action == "created"
    assert store.list_lessons().total == 3


def test_recall_loop_guard_rejects_restated_lesson(store: Memory) -> None:
    injected = store.add(draft(1)).lesson
    assert injected is not None
    restated = draft(1).model_copy(
        update={"symptom": "seen again", "injected_lesson_ids": (injected.id,)}
    )
    result = store.add(restated)
    assert result.action == "rejected_recall_loop"
    assert result.lesson is None and injected.id in result.reason
    assert store.get(injected.id).seen == 1  # nothing stored, not even a sighting
    novel = draft(2).model_copy(update={"injected_lesson_ids": (injected.id,)})
    assert store.add(novel).action == "created"


def test_scope_isolation_and_global(store: Memory) -> None:
    store.add(draft(1, scope="alice"))
    shared = store.add(draft(1, scope="global")).lesson
    assert store.recall(query(1, scope="bob")) == []
    assert [s.lesson.scope for s in store.recall(query(1, scope="alice"))] == ["alice"]
    both = store.recall(query(1, scope="bob", include_global=True))
    assert shared is not None and [s.lesson.id for s in both] == [shared.id]


def test_unrelated_query_gets_nothing(store: Memory) -> None:
    store.add(draft(1))
    assert store.recall(LessonQuery(text="completely other words here")) == []
    # The cut is the store's, unless the query overrides it.
    assert store.recall(LessonQuery(text="alpha1 zulu", min_similarity=0.99)) == []
    assert len(store.recall(LessonQuery(text="alpha1 zulu", min_similarity=0.1))) == 1


def test_deprecated_and_merged_are_never_recalled(store: Memory) -> None:
    a = store.add(draft(1)).lesson
    b = store.add(draft(2)).lesson
    assert a is not None and b is not None
    store.set_status(a.id, "deprecated")
    store.set_status(b.id, "merged", merged_into=a.id)
    assert store.recall(query(1)) == [] and store.recall(query(2)) == []
    assert store.get(a.id).merged_from == (b.id,)
    store.set_status(b.id, "validated")  # undo the merge
    assert store.get(a.id).merged_from == ()
    assert store.get(b.id).merged_into is None
    assert [s.lesson.id for s in store.recall(query(2))] == [b.id]
    with pytest.raises(MemoryUsageError):
        store.set_status(a.id, "merged")
    with pytest.raises(MemoryUsageError, match="no status 'bogus': one of candidate, validated"):
        store.set_status(a.id, "bogus")  # type: ignore[arg-type]


def test_error_type_filter(store: Memory) -> None:
    store.add(draft(1, error_type="timeout"))
    assert store.recall(query(1, error_types=("syntax_error",))) == []
    assert len(store.recall(query(1, error_types=("timeout",)))) == 1


def test_flagged_lesson_ranks_below_an_equally_similar_one(store: Memory) -> None:
    # Two lessons with the same symptom and root cause: the same similarity and the same
    # words for any query; only the fix differs, so they are not duplicates.
    texts = {"symptom": "alpha1 bravo1 charlie1 failed", "root_cause": "delta1 echo1 foxtrot1"}
    first = store.add(draft(1).model_copy(update={**texts, "fix": "golf1 hotel1"})).lesson
    second = store.add(draft(1).model_copy(update={**texts, "fix": "kilo1 lima1 mike1"})).lesson
    assert first is not None and second is not None
    both = store.recall(query(1, limit=2))
    assert {s.lesson.id for s in both} == {first.id, second.id}
    assert both[0].similarity == pytest.approx(both[1].similarity)
    for flagged, other in ((both[0].lesson, both[1].lesson), (both[1].lesson, both[0].lesson)):
        assert store.flag_for_review(flagged.id, "recalled in failing runs")
        ranked = store.recall(query(1, limit=2))
        assert [s.lesson.id for s in ranked] == [other.id, flagged.id]
        assert [s.lesson.id for s in store.recall(query(1, limit=1))] == [other.id]
        assert store.clear_review_flag(flagged.id)


def _add_alike(store: Memory, count: int) -> None:
    """`count` lessons that all match "shared words overflow" equally well."""
    for n in range(count):
        store.add(
            LessonDraft(
                error_type="runtime_error",
                symptom=f"shared words overflow kilo{n}",
                root_cause=f"shared words overflow lima{n}",
                fix=f"mike{n} " * 10,
            )
        )


def test_token_budget_and_limit(store: Memory) -> None:
    _add_alike(store, 5)
    q = LessonQuery(text="shared words overflow", limit=5, min_similarity=0.1)
    everything = store.recall(q.model_copy(update={"token_budget": 10_000}))
    assert len(everything) == 5
    one_block = len(render_lessons(everything[:1])) // 4 + 1
    two_blocks = len(render_lessons(everything[:2])) // 4 + 1
    budgeted = store.recall(q.model_copy(update={"token_budget": two_blocks}))
    assert len(budgeted) == 2
    assert len(render_lessons(budgeted)) / 4 <= two_blocks
    # Below one lesson's size, the best lesson is still given; its block is clipped to fit.
    small = store.recall(q.model_copy(update={"token_budget": one_block - 20}))
    assert [s.lesson.id for s in small] == [everything[0].lesson.id]
    assert estimate_tokens(render_lessons(small, one_block - 20)) <= one_block - 20
    # Not even the labels fit: nothing (an all-'…' lesson would help no one).
    assert store.recall(q.model_copy(update={"token_budget": 30})) == []
    assert len(store.recall(q.model_copy(update={"token_budget": 0}))) == 0
    assert len(store.recall(q.model_copy(update={"limit": 3, "token_budget": 10_000}))) == 3


def test_an_excluded_lesson_gives_its_place_and_budget_to_the_next(store: Memory) -> None:
    _add_alike(store, 3)
    q = LessonQuery(text="shared words overflow", limit=1, min_similarity=0.1)
    everything = store.recall(q.model_copy(update={"limit": 3, "token_budget": 10_000}))
    ranked = [s.lesson.id for s in everything]
    assert len(ranked) == 3
    # One lesson's room: without the best, the second fills it (not an empty answer).
    one_block = len(render_lessons(everything[:1])) // 4 + 1
    room = q.model_copy(update={"limit": 3, "token_budget": one_block})
    assert [s.lesson.id for s in store.recall(room)] == ranked[:1]
    (second,) = store.recall(room.model_copy(update={"exclude": (ranked[0],)}))
    assert second.lesson.id == ranked[1]
    left = store.recall(q.model_copy(update={"limit": 3, "exclude": tuple(ranked[:2])}))
    assert [s.lesson.id for s in left] == [ranked[2]]
    assert store.recall(q.model_copy(update={"exclude": tuple(ranked)})) == []


def test_near_copies_are_diversified(store: Memory) -> None:
    # Same root cause and fix under another error type: not a dedup (types differ), but one
    # of them is enough in a prompt.
    store.add(draft(1, error_type="runtime_error"))
    store.add(draft(1, error_type="check_failed"))
    assert store.list_lessons().total == 2
    assert len(store.recall(query(1, limit=5))) == 1
    other_fix = draft(1).model_copy(update={"fix": "november oscar papa quebec romeo"})
    store.add(other_fix)  # same situation, a different fix: worth showing too
    assert len(store.recall(query(1, limit=5))) == 2


def test_recall_is_read_only_and_report_use_counts(store: Memory) -> None:
    lesson = store.add(draft(1)).lesson
    assert lesson is not None
    store.recall(query(1))
    assert store.get(lesson.id).recalled == 0
    store.record_run("run-1", task_id="t1", goal="parse prices", scope="default")
    store.report_use("run-1", "seed", [lesson.id])
    store.report_use("run-1", "seed", [lesson.id])  # same stage twice counts once
    store.report_use("run-1", "reflection", [lesson.id])
    assert store.get(lesson.id).recalled == 2
    with pytest.raises(LessonNotFoundError):
        store.report_use("run-1", "seed", ["les_missing"])


def test_finish_run_sets_outcomes_and_lift(store: Memory) -> None:
    good = store.add(draft(1)).lesson
    bad = store.add(draft(2)).lesson
    assert good is not None and bad is not None
    store.report_use("run-ok", "seed", [good.id])
    store.report_use("run-ok", "reflection", [good.id])
    store.report_use("run-ko", "seed", [bad.id])
    run = store.finish_run("run-ok", True, rounds=2, prompt_tokens=100, completion_tokens=50)
    store.finish_run("run-ko", False, rounds=3)
    store.finish_run("run-ok", True, rounds=2)  # idempotent for the counters
    assert run.passed is True and run.recalled_lesson_ids == (good.id,)
    assert (store.get(good.id).helped, store.get(good.id).misled) == (1, 0)
    assert (store.get(bad.id).helped, store.get(bad.id).misled) == (0, 1)
    assert {u.outcome for u in store.uses(good.id)} == {"passed"}
    assert [u.stage for u in store.uses(good.id)] == ["seed", "reflection"]
    with pytest.raises(LessonNotFoundError):
        store.finish_run("run-missing", True)


def test_written_lessons_are_linked_to_the_run(store: Memory) -> None:
    store.record_run("run-w", task_id="t")
    created = store.add(draft(1), run_id="run-w").lesson
    assert created is not None
    assert store.get_run("run-w").written_lesson_ids == (created.id,)


def test_list_lessons_filters_sorts_and_pages(store: Memory) -> None:
    for n in range(7):
        store.add(draft(n, scope="s", error_type="timeout" if n % 2 else "runtime_error"))
    store.add(draft(99, scope="other"))
    page = store.list_lessons(LessonFilter(scope="s", limit=3, sort="created_at", descending=False))
    assert page.total == 7 and len(page.items) == 3
    rest = store.list_lessons(LessonFilter(scope="s", offset=3, limit=10, descending=False))
    assert len(rest.items) == 4
    ids = [lesson.id for lesson in page.items + rest.items]
    assert len(set(ids)) == 7
    assert store.list_lessons(LessonFilter(error_type="timeout")).total == 3
    assert store.list_lessons(LessonFilter(status=("deprecated",))).total == 0
    with pytest.raises(ValueError):
        LessonFilter(limit=100_000)  # no silent cap: the caller must page


def test_update_reembeds_and_redacts(store: Memory) -> None:
    lesson = store.add(draft(1)).lesson
    assert lesson is not None
    updated = store.update(lesson.id, symptom="sierra tango uniform password=topsecret")
    assert "topsecret" not in updated.symptom
    assert [s.lesson.id for s in store.recall(LessonQuery(text="sierra tango uniform"))] == [
        lesson.id
    ]
    assert store.check().clean


def test_an_edit_that_would_break_the_store_is_refused_and_writes_nothing(store: Memory) -> None:
    from memory.export import export_lines

    lesson = store.add(draft(1)).lesson
    other = store.add(draft(2)).lesson
    assert lesson is not None and other is not None
    for fields, said in (
        ({"error_type": ""}, "error_type cannot be empty"),
        ({"fix": "  \n"}, "fix cannot be empty"),
        ({"scope": "s" * 201}, "too long: scope (201 characters)"),
        ({"error_type": "E" * 101, "symptom": "kilo"}, "too long: error_type (101 characters)"),
    ):
        with pytest.raises(MemoryUsageError, match=said.replace("(", r"\(").replace(")", r"\)")):
            store.update(lesson.id, **fields)  # type: ignore[arg-type]
    assert store.get(lesson.id) == lesson
    assert len(list(export_lines(store))) == 3  # the header and both lessons: still exports
    # A merged member is refused: undoing the merge restores it as merged, losing the edit.
    store.set_status(other.id, "merged", merged_into=lesson.id)
    with pytest.raises(MemoryUsageError, match=f"merged into {lesson.id}: edit that lesson"):
        store.update(other.id, fix="changed")
    assert store.get(other.id).fix == "golf2 hotel2 india2"
    assert store.check().clean
    with pytest.raises(ValueError, match="at most 100 characters"):
        draft(3, error_type="E" * 101)  # a draft past the bounds never reaches a store


def test_a_run_that_ended_by_an_error_settles_its_uses_as_aborted(store: Memory) -> None:
    lesson = store.add(draft(1)).lesson
    assert lesson is not None
    store.record_run("r-crash", task_id="t", scope="default")
    store.report_use("r-crash", "seed", [lesson.id])
    run = store.abort_run("r-crash", "BackendError: the model crashed (SIGSEGV) token=abc123secret")
    assert run.passed is None and run.error.startswith("BackendError: the model crashed")
    assert "abc123secret" not in run.error  # redacted like every text the memory keeps
    assert [u.outcome for u in store.uses(lesson.id)] == ["aborted"]
    after = store.get(lesson.id)
    assert (after.recalled, after.helped, after.misled) == (1, 0, 0)
    # A finished run is not aborted afterwards; aborting twice changes nothing.
    store.record_run("r-done")
    store.finish_run("r-done", True)
    assert store.abort_run("r-done", "late").error == ""
    assert store.abort_run("r-crash", "again").error.startswith("BackendError")
    # An ended run takes no more uses: they would stay pending, counted nowhere.
    for ended, word in (("r-crash", "aborted"), ("r-done", "passed")):
        with pytest.raises(MemoryUsageError, match=f"has ended \\({word}\\)"):
            store.report_use(ended, "reflection", [lesson.id])
    assert [u.outcome for u in store.uses(lesson.id)] == ["aborted"]
    # A run finished after all (the Python API allows it) no longer says it ended by an error.
    assert store.finish_run("r-crash", False).error == ""
    for blank in ({"error_type": " "}, {"symptom": ""}, {"root_cause": "\n"}, {"fix": "\t "}):
        fields = {"error_type": "E", "symptom": "s", "root_cause": "r", "fix": "f", **blank}
        with pytest.raises(ValueError, match="cannot be blank"):
            LessonDraft.model_validate(fields)
    assert LessonDraft(error_type="E", symptom="s", root_cause="r", fix="f", applies_when="")


def test_check_finds_and_repairs_drift(store: Memory) -> None:
    a = store.add(draft(1)).lesson
    b = store.add(draft(2)).lesson
    c = store.add(draft(3)).lesson
    assert a is not None and b is not None and c is not None
    faults.lose_index_entries(store, [a.id])  # missing from the index
    faults.drift_index_error_type(store, b.id, "KeyError")  # metadata drift
    faults.add_index_orphan(store, "les_orphan")
    faults.leave_pending(store, [c.id])  # a crash after the SQL commit leaves this state
    report = store.check()
    assert report.missing_in_index == (a.id,)
    assert report.metadata_drift == (b.id,)
    assert report.orphans_in_index == ("les_orphan",)
    assert report.pending == (c.id,)
    assert not report.clean
    assert store.recall(query(1)) == []  # missing from the index: not findable
    assert len(store.recall(query(2))) == 1  # metadata drift: SQL (the truth) decides
    store.check(repair=True)
    assert store.check().clean
    # A stale copy in another scope's collection (an id in two collections) is found too.
    # Whichever collection is read last (their order is the index's), the copy is found.
    for elsewhere in ("aaa", "zzz"):
        faults.add_index_orphan(store, a.id, scope=elsewhere)
        assert store.check().missing_in_index == (a.id,)
        store.check(repair=True)
        assert store.check().clean and faults.index_count(store) == 3
    # A move to another scope whose index write never ran: pending, old entry still there.
    faults.add_index_orphan(store, a.id, scope="before_the_move")
    faults.leave_pending(store, [a.id])
    store.check(repair=True)
    assert store.check().clean and faults.index_count(store) == 3
    assert len(store.recall(query(1))) == 1 and len(store.recall(query(2))) == 1


def test_reindex_rebuilds_from_sql(store: Memory) -> None:
    for n in range(3):
        store.add(draft(n))
    faults.wipe_index(store)
    assert store.recall(query(1)) == []
    assert store.reindex() == 3
    assert faults.index_count(store) == 3 and store.check().clean
    assert len(store.recall(query(1))) == 1


def test_mixing_embedding_models_is_refused(spec: StoreSpec) -> None:
    first = spec.open(HashEmbedder(dim=256))
    first.add(draft(1))
    first.close()
    with pytest.raises(EmbeddingMismatchError, match="dim 256"):
        spec.open(HashEmbedder(dim=128))
    memory = spec.open(HashEmbedder(dim=256))
    try:
        with pytest.raises(EmbeddingMismatchError):
            faults.write_raw_vector(memory, "x", [0.1] * 128)
    finally:
        memory.close()


def test_an_empty_store_takes_the_embedder_it_is_opened_with(spec: StoreSpec) -> None:
    # Nothing was embedded, so nothing can be mixed: no refusal, no reembed flag needed.
    spec.open(HashEmbedder(dim=256)).close()
    reopened = spec.open(HashEmbedder(dim=128))
    try:
        lesson = reopened.add(draft(1)).lesson
        assert lesson is not None and lesson.embedding_model == "hash-bow-128"
        assert [s.lesson.id for s in reopened.recall(query(1))] == [lesson.id]
    finally:
        reopened.close()


def test_reembed_converts_the_store(spec: StoreSpec) -> None:
    memory = spec.open(HashEmbedder(dim=256))
    lesson = memory.add(draft(1)).lesson
    memory.close()
    assert lesson is not None
    converted = spec.open(HashEmbedder(dim=128), reembed=True)
    try:
        assert converted.get(lesson.id).embedding_model == "hash-bow-128"
        assert [s.lesson.id for s in converted.recall(query(1))] == [lesson.id]
        assert converted.add(draft(1)).action == "merged_duplicate"
    finally:
        converted.close()
