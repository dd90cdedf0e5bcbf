"""What recall compares: symptoms and queries without their shared template (memory.matchtext)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.feedback import Feedback, FeedbackKind
from memory import HashEmbedder, LessonDraft, LessonQuery, Memory, matchtext
from memory.dedup import index_text
from memory.matchtext import FEEDBACK_KINDS, match_text
from retrospectives.facts import symptom_of

CRASH = Feedback(
    kind="runtime_error",
    stage="execution",
    summary="Traceback ...",
    error_type="ValueError",
    location="solution.py:8",
    key_message="ValueError: could not convert string to float: '$860.45'",
    failing_example="total += float(row['amount'])",
    input_evidence="values of column 'amount' in invoices.csv: '$860.45', '$4,332.59'",
)
TEMPLATE_WORDS = ("runtime error", "runtime_error", "kind", "where", "solution.py", "ValueError")
TEMPLATE_LABELS = ("message:", "in the input:", "failing example:")


def test_the_kinds_are_the_agents_feedback_kinds() -> None:
    assert set(FEEDBACK_KINDS) == set(typing.get_args(FeedbackKind))


@pytest.mark.parametrize(
    "text",
    [symptom_of(CRASH), CRASH.compressed()],
    ids=["lesson symptom (retrospectives.facts)", "reflection query (Feedback.compressed)"],
)
def test_both_sides_lose_the_template_and_keep_the_content(text: str) -> None:
    out = match_text(text)
    for word in (*TEMPLATE_WORDS, *TEMPLATE_LABELS):
        assert word not in out
    assert "could not convert string to float: '$860.45'" in out
    assert "values of column 'amount' in invoices.csv: '$860.45', '$4,332.59'" in out


def test_the_lesson_and_the_query_of_one_failure_meet_on_the_same_words() -> None:
    # The symptom carries no failing example when it has input evidence (symptom_of).
    query = match_text(CRASH.compressed()).replace("total += float(row['amount'])\n", "")
    assert match_text(symptom_of(CRASH)) == query.replace("\n", " (", 1) + ")"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("check failed: totals differ for 'ACME'", "totals differ for 'ACME'"),
        ("check_failed: totals differ", "totals differ"),
        ("syntax error SyntaxError at main.py:3: invalid syntax", "invalid syntax"),
        ("timeout (failing example: while True: pass)", "(while True: pass)"),
        ("kind: check_failed\nissue: day 3 lacks a budget", "day 3 lacks a budget"),
        ("message: json.decoder.JSONDecodeError: Unexpected UTF-8 BOM", "Unexpected UTF-8 BOM"),
        ("IndexError: list index out of range", "list index out of range"),
        ("StopIteration: empty reader", "empty reader"),
        ('File "/tmp/ws/solution.py", line 12, in main\nx = 1', "x = 1"),
        ("bad JSON (line 1, column 1)", "bad JSON"),
        ("raised in lib/parse.py:40:7 on load", "raised in on load"),
    ],
)
def test_structure_goes(text: str, expected: str) -> None:
    assert match_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # A capitalised word before a colon is content unless it names an exception.
        "Expecting value: the file is empty",
        "Totals: wrong for 'ACME'",
        # Kind words that are not a header: prose, code, a goal with its input's head.
        "Timeout occurs because the loop never ends",
        "int(qty) fails on the header row; call total() once",
        "Write solution.py that reads invoices.csv\n--- invoices.csv ---\nclient,amount",
    ],
)
def test_content_stays(text: str) -> None:
    assert match_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "runtime error KeyError at solution.py:5: KeyError: 'quantity'",
        "runtime error KeyError: 'quantity'",
        "kind: runtime_error (KeyError)\nwhere: solution.py:5\nmessage: KeyError: 'quantity'",
    ],
)
def test_a_bare_value_keeps_its_exception_name(text: str) -> None:
    # "KeyError: 'quantity'" says what happened only through its type.
    assert match_text(text) == "KeyError 'quantity'"


def test_a_text_that_is_only_template_is_kept_as_it_was() -> None:
    only = "kind: runtime_error (ValueError)\nwhere: solution.py:8"
    assert match_text(only) == only


def test_the_index_document_is_the_matched_text() -> None:
    doc = index_text(symptom_of(CRASH), "amounts carry a currency sign")
    assert doc.endswith("\namounts carry a currency sign")
    assert "runtime error" not in doc and "solution.py" not in doc


def test_recall_compares_the_matched_query_with_the_matched_document() -> None:
    """Two lessons, one sharing only the template with the query, one its content.

    As written, the template-sharer is closer (more shared words); as matched, it shares
    nothing and the content-sharer is the only lesson above the cut."""
    embedder = HashEmbedder()
    same_frame = LessonDraft(
        scope="demo",
        error_type="ValueError",
        symptom="runtime error ValueError at solution.py:8: ValueError: 'qty' header row",
        root_cause="header row parsed as data",
        fix="skip the header",
    )
    same_content = LessonDraft(
        scope="demo",
        error_type="ValueError",
        symptom="could not convert string to float '$4,332.59' currency amount",
        root_cause="currency sign in amount",
        fix="strip '$' and ','",
    )
    query_text = (
        "kind: runtime_error (ValueError)\nwhere: solution.py:8\n"
        "message: ValueError: could not convert string to float: '$860.45' amount"
    )
    raw = embedder.embed([query_text, *(f"{d.symptom}\n{d.root_cause}" for d in (same_frame,))])
    raw_frame = sum(a * b for a, b in zip(raw[0], raw[1], strict=True))
    assert raw_frame > 0.3  # as written, the frame alone would pass a 0.3 cut
    with Memory.in_memory(embedder, min_similarity=0.3) as memory:
        stored = [r.lesson for r in memory.add_many([same_frame, same_content])]
        assert stored[0] is not None and stored[1] is not None
        frame_id, content_id = stored[0].id, stored[1].id
        query = LessonQuery(
            text=query_text, scope="demo", error_types=("ValueError", "runtime_error"), limit=3
        )
        hits = memory.recall(query)
        assert [h.lesson.id for h in hits] == [content_id]
        vectors = embedder.embed(
            [match_text(query_text), index_text(same_content.symptom, same_content.root_cause)]
        )
        expected = sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True))
        assert hits[0].similarity == pytest.approx(expected, abs=1e-5)
        assert frame_id not in memory.bm25_scores(query_text, ["demo"])


def test_the_evidence_readings_go_and_their_values_stay(tmp_path: Path) -> None:
    """The readings `agent.tables.column_line` appends repeat the same words on every
    column of their kind ("marks decimals", "mean yes"): with them, currency task starts
    recalled the decimal-comma lesson. Written by the agent's own code, so the two stay in
    step."""
    from agent.profile import input_profile

    ws = tmp_path / "ws"
    ws.mkdir()
    rows = ["id,kwh,ok"] + [f'{i},"{v}",{b}' for i, (v, b) in enumerate(
        [("1.010,9", "y"), ("742,2", "No"), ("2.615,9", "TRUE"), ("7,5", "0")] * 2
    )]  # fmt: skip
    (ws / "m.csv").write_text("\n".join(rows) + "\n")
    profile = input_profile(ws)
    assert any("as numbers" in line for line in profile)
    assert any("mean yes" in line for line in profile)
    for line in profile:
        text = match_text(f"in the input: {line}")
        assert text == line.split("; ")[0], text
    # A lesson's symptom is written without them: its 300 characters go to the values.
    for line, value, reading in zip(profile, ("'7,5'", "'TRUE'"), ("as numbers", "mean yes"),
                                    strict=True):  # fmt: skip
        written = symptom_of(CRASH.model_copy(update={"input_evidence": line}))
        assert value in written and reading not in written, written
        # Also when an issue quotes the line (the caught-crash issue) and makes the detail.
        quoted = CRASH.model_copy(
            update={
                "key_message": None,
                "input_evidence": None,
                "issues": (f"skipped values. The input has {line}",),
            }
        )
        written = symptom_of(quoted)
        assert value in written and reading not in written, written
    symptom = (
        f"runtime error ValueError at solution.py:3: could not convert (in the input: {profile[0]})"
    )
    assert match_text(symptom).endswith(
        "(values of column 'kwh' in m.csv (4 of 4 distinct, "
        "varied formats first): '1.010,9', '742,2', '2.615,9', '7,5')"
    )


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (matchtext._AT_LOCATION, " " * 50 + "at solution.py:3"),
        (matchtext._AT_LOCATION, "a/" * 50 + ".py:3"),
        (matchtext._AT_LOCATION, "x" * 100),
        (matchtext._LINE_NO, " " * 50 + "line 3"),
        (matchtext._LINE_NO, "\t" * 50),
    ],
)
def test_no_match_starts_inside_a_run(pattern: re.Pattern[str], text: str) -> None:
    """Trying a match from every position of a long run of spaces or path characters was
    quadratic: one 250 KB token kept an import busy for minutes and every later search for
    seconds. A match starts at a run's beginning only (the leftmost match is the same)."""
    for start in range(1, 40):
        assert pattern.match(text, start) is None, start
    matched = pattern.search(text)
    assert matched is None or matched.start() == 0


def test_a_location_is_still_taken_out_wherever_its_run_begins() -> None:
    assert match_text("KeyError at /tmp/x/solution.py:8 in main") == "KeyError in main"
    assert match_text("bad value, line 3 (char 9) here") == "bad value here"
    assert match_text("x" * 30_000 + " solution.py:1") == "x" * 30_000


_PIECES = (
    'File "/w/solution.py", line 12, in main',
    "FILE '/w/x.py'",
    'File "<stdin>", line 1',
    "at solution.PY:8:3",
    "x.pyw:2",
    "LINE 4, col 9",
    "line 3 (char 17)",
    "lıne 5",
    'Fıle "a", line 2',
    "ſolution.py:3",
    "li",
    "ne 4",
    "( , )",
    "()",
    "ValueError: ",
    "could not convert",
    "'$1,299.99'",
    "\n",
    " ",
    "é",
)


@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=12))
@settings(max_examples=400, deadline=None)
def test_the_fast_path_skips_a_pattern_only_where_it_cannot_match(parts: list[str]) -> None:
    # match_text skips the location patterns for an ASCII text without '.py', 'file' or
    # 'line', and the empty-parentheses one without '(': each skip must be one the pattern
    # itself would have made (a match found where the text was skipped would change what
    # recall compares).
    text = "".join(parts)
    lowered = text.lower()
    if text.isascii() and ".py" not in lowered and "file" not in lowered:
        assert matchtext._AT_LOCATION.search(text) is None
    if text.isascii() and "line" not in lowered:
        assert matchtext._LINE_NO.search(text) is None
    if "(" not in text:
        assert matchtext._EMPTY_PARENS.search(text) is None
    # ... and the output is what every pattern applied in turn gives.
    assert match_text(text) == _every_pattern(text)


@pytest.mark.parametrize("text", ["error li a.py:3ne 4 here", 'bad li File "x"ne 7 value'])
def test_a_location_taken_out_can_make_the_word_line(text: str) -> None:
    assert match_text(text) == _every_pattern(text)


def _every_pattern(text: str) -> str:
    lines = [line for line in text.splitlines() if not matchtext._DROP_LINE.match(line)]
    out = matchtext._LABEL.sub("", "\n".join(lines))
    out = matchtext._INLINE_LABEL.sub("(", out)
    out = matchtext._KIND_HEADER.sub(matchtext._drop_kind_header, out)
    out = matchtext._EXC_PREFIX.sub(matchtext._drop_exception_prefix, out)
    out = matchtext._AT_LOCATION.sub("", out)
    out = matchtext._LINE_NO.sub("", out)
    out = matchtext._EMPTY_PARENS.sub("", matchtext.drop_readings(out))
    cleaned = [matchtext._SPACES.sub(" ", line).strip() for line in out.splitlines()]
    result = "\n".join(line for line in cleaned if line)
    return result if result.strip() else text
