"""The MCP tools as plain methods (agent/app/mcp_tools.py), on an in-memory store: no transport.

The end-to-end tests over the SDK's stdio and HTTP clients are in test_mcp_e2e.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.app.mcp_server import check_bind
from agent.app.mcp_tools import LessonTools
from agent.errors import ConfigurationError, ToolCallError
from memory import LessonNotFoundError, Memory
from memory.curate import TransitionError

CURRENCY = {
    "error_type": "ValueError",
    "symptom": "float() fails on '$1,299.99' in the amount column",
    "root_cause": "money columns carry a currency sign and thousands separators",
    "fix": "strip the currency sign and the thousands separators before float()",
}
BOM = {
    "error_type": "KeyError",
    "symptom": "KeyError: 'id' although the CSV header has an id column",
    "root_cause": "the file starts with a UTF-8 byte order mark glued to the first header",
    "fix": "open the file with encoding='utf-8-sig'",
}


@pytest.fixture
def tools() -> Iterator[LessonTools]:
    memory = Memory.in_memory(min_similarity=0.1)
    yield LessonTools(memory)
    memory.close()


def test_record_creates_then_folds_a_duplicate(tools: LessonTools) -> None:
    first = tools.record_lesson("billing", **CURRENCY, evidence="ValueError: '$1,299.99'")
    again = tools.record_lesson("billing", **CURRENCY)
    assert first.action == "created" and first.lesson_id is not None
    assert again.action == "folded" and again.lesson_id == first.lesson_id
    assert again.lesson is not None and again.lesson.seen == 2
    assert first.lesson_id in again.reason


def test_secrets_are_masked_and_reported(tools: LessonTools) -> None:
    answer = tools.record_lesson(
        "billing",
        "AuthenticationError",
        "401 from the payments API with key sk-live1234567890abcdefghijkl",
        "the client read an expired key",
        "export PAYMENTS_API_KEY=sk-live1234567890abcdefghijkl again",
    )
    assert answer.action == "created" and answer.lesson is not None
    assert "openai_key" in answer.redacted
    stored = tools.get_lesson(answer.lesson.id).lesson
    assert "sk-live" not in stored.symptom + stored.fix
    assert "[REDACTED]" in stored.fix


def test_recall_stays_in_its_scope(tools: LessonTools) -> None:
    tools.record_lesson("billing", **CURRENCY)
    mine = tools.recall_lessons("float fails on '$1,299.99' amounts", "billing")
    theirs = tools.recall_lessons("float fails on '$1,299.99' amounts", "other-project")
    assert len(mine.lesson_ids) == 1 and "currency sign" in mine.block
    assert theirs.lesson_ids == () and theirs.block == ""
    assert tools.search_lessons("other-project", text="currency").lessons == ()


def test_recall_given_the_task_s_data_leaves_out_lessons_about_other_data(
    tools: LessonTools,
) -> None:
    tools.record_lesson("billing", **CURRENCY)
    query = "the totals are wrong: float() fails on the amount column"
    dollars = ['--- invoices.csv ---\nclient,amount\nacme,"$1,299.99"']
    plain = ["--- invoices.csv ---\nclient,amount\nacme,1299.99"]
    assert len(tools.recall_lessons(query, "billing").lesson_ids) == 1
    assert len(tools.recall_lessons(query, "billing", data=dollars).lesson_ids) == 1
    assert tools.recall_lessons(query, "billing", data=plain).lesson_ids == ()


def test_recall_leaves_out_what_did_not_help_and_gives_the_next(tools: LessonTools) -> None:
    euro = {
        "error_type": "ValueError",
        "symptom": "float() fails on '€ 1.299,99' amounts",
        "root_cause": "European exports write a decimal comma and dots between thousands",
        "fix": "remove the dots, turn the decimal comma into a point, then float()",
    }
    for lesson in (CURRENCY, euro):
        assert tools.record_lesson("billing", **lesson).action == "created"
    query = "float fails on '$1,299.99' amounts"
    (best,) = tools.recall_lessons(query, "billing", limit=1).lesson_ids
    (nxt,) = tools.recall_lessons(query, "billing", limit=1, exclude=[best]).lesson_ids
    assert nxt != best
    assert tools.recall_lessons(query, "billing", exclude=[best, nxt]).lesson_ids == ()
    # In a run: the one left out counts against itself, even though the run passed.
    run = tools.start_run("billing").run_id
    assert tools.recall_lessons(query, "billing", limit=1, run_id=run).lesson_ids == (best,)
    tools.recall_lessons(query, "billing", limit=1, run_id=run, exclude=[best])
    tools.report_outcome(run, [], passed=True, misled_ids=[best])
    assert [
        (tools.get_lesson(i).lesson.helped, tools.get_lesson(i).lesson.misled) for i in (best, nxt)
    ] == [(0, 1), (1, 0)]


def test_recall_into_a_run_guards_against_relearning_it(tools: LessonTools) -> None:
    tools.record_lesson("billing", **CURRENCY)
    run = tools.start_run("billing", goal="sum the invoices")
    recalled = tools.recall_lessons("float fails on '$1,299.99'", "billing", run_id=run.run_id)
    assert len(recalled.lesson_ids) == 1
    again = tools.record_lesson("billing", **CURRENCY, run_id=run.run_id)
    assert again.action == "refused" and again.lesson_id is None
    assert recalled.lesson_ids[0] in again.reason


def test_outcomes_move_lift(tools: LessonTools) -> None:
    lesson = tools.record_lesson("billing", **CURRENCY).lesson
    other = tools.record_lesson("billing", **BOM).lesson
    assert lesson is not None and other is not None
    # A baseline: a run of the scope without the lesson that failed.
    base = tools.start_run("billing")
    tools.report_outcome(base.run_id, [other.id], passed=False)
    for _ in range(2):
        run = tools.start_run("billing")
        hits = tools.recall_lessons("'$1,299.99' float", "billing", run_id=run.run_id, limit=1)
        assert hits.lesson_ids == (lesson.id,)
        done = tools.report_outcome(run.run_id, [], passed=True)
        assert [x.id for x in done.lessons] == [lesson.id]
    detail = tools.get_lesson(lesson.id)
    assert detail.lesson.helped == 2 and detail.lesson.recalled == 2 and detail.uses == 2
    assert detail.lift is not None
    assert (detail.lift.runs, detail.lift.passed, detail.lift.pass_rate) == (2, 2, 1.0)
    assert detail.lift.baseline_rate == 0.0 and detail.lift.lift == 1.0
    assert tools.get_lesson(other.id).lesson.misled == 1


def test_a_recalled_lesson_reported_again_counts_once(tools: LessonTools) -> None:
    lesson = tools.record_lesson("billing", **CURRENCY).lesson
    assert lesson is not None
    run = tools.start_run("billing").run_id
    error = "ValueError: could not convert string to float: '$1,299.99'"
    hits = tools.recall_lessons(error, "billing", error_type=CURRENCY["error_type"], run_id=run)
    assert hits.lesson_ids == (lesson.id,)
    tools.report_outcome(run, [lesson.id], passed=True)  # the assistant names what it used
    detail = tools.get_lesson(lesson.id)
    assert (detail.lesson.recalled, detail.lesson.helped, detail.uses) == (1, 1, 1)


def test_run_errors_say_what_to_do(tools: LessonTools) -> None:
    lesson = tools.record_lesson("billing", **CURRENCY).lesson
    assert lesson is not None
    with pytest.raises(ToolCallError, match="call start_run first"):
        tools.report_outcome("mcp_nope", [lesson.id], passed=True)
    with pytest.raises(ToolCallError, match="call start_run first"):
        tools.recall_lessons("x", "billing", run_id="mcp_nope")
    run = tools.start_run("shipping")
    with pytest.raises(ToolCallError, match="scope 'billing'"):
        tools.report_outcome(run.run_id, [lesson.id], passed=True)
    # A recall into the run asks the run's scope: another scope's lessons never count there.
    with pytest.raises(ToolCallError, match="is of scope 'shipping', this recall asks scope"):
        tools.recall_lessons("float fails on '$1,299.99'", "billing", run_id=run.run_id)
    assert tools.get_lesson(lesson.id).uses == 0
    with pytest.raises(LessonNotFoundError):
        tools.report_outcome(run.run_id, ["les_missing"], passed=True)
    tools.report_outcome(run.run_id, [], passed=False)
    with pytest.raises(ToolCallError, match="already reported"):
        tools.report_outcome(run.run_id, [], passed=True)


def test_deprecated_lessons_are_never_recalled(tools: LessonTools) -> None:
    lesson = tools.record_lesson("billing", **CURRENCY).lesson
    assert lesson is not None
    answer = tools.deprecate_lesson(lesson.id, "the export format changed")
    assert answer.lesson.status == "deprecated" and answer.reason == "the export format changed"
    assert tools.recall_lessons("float fails on '$1,299.99'", "billing").lesson_ids == ()
    with pytest.raises(TransitionError, match="already deprecated"):
        tools.deprecate_lesson(lesson.id, "again")


def test_search_lists_or_finds_and_top_renders(tools: LessonTools) -> None:
    tools.record_lesson("billing", **CURRENCY)
    tools.record_lesson("billing", **BOM)
    listed = tools.search_lessons("billing")
    assert listed.total == 2 and len(listed.lessons) == 2
    # Listing (no text) takes include_global and an empty error type as a search does.
    tools.record_lesson("global", **{**CURRENCY, "symptom": "a shared lesson's symptom"})
    assert tools.search_lessons("billing", include_global=True).total == 3
    assert tools.search_lessons("billing", error_type="").total == 2
    found = tools.search_lessons("billing", text="byte order mark header", error_type="KeyError")
    assert [x.lesson.error_type for x in found.lessons] == ["KeyError"] and found.note == ""
    # Nothing passed the gates: the answer says where it looked and why, not just "0".
    nothing = tools.search_lessons("billing", text="qwertyuiop zxcvbnm")
    assert nothing.total == 0 and nothing.note.startswith("no lesson in scope 'billing' passed")
    assert "search without text lists" in nothing.note
    top = tools.top_lessons("billing")
    assert top.startswith("Top lessons of scope 'billing' (2 active)")
    assert "utf-8-sig" in top
    assert tools.top_lessons("empty") == "No lessons in scope 'empty' yet."


def test_http_binds_beyond_loopback_only_with_a_token() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        check_bind(host, None)
    for host in ("0.0.0.0", "192.168.1.20", "::", "example.org"):
        with pytest.raises(ConfigurationError, match="not a loopback address"):
            check_bind(host, None)
        check_bind(host, "a-token")
