"""The seed stage's stated-type gate (memory.seedgate): a seed query that states an error is
gated on the error types it states, on a real store (SQLite file + embedded chromadb), with an
embedder that puts the lessons at chosen cosines so only the gate decides."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.feedback import Feedback
from memory import LessonDraft, LessonQuery, Memory
from memory.embeddings import KeywordEmbedder
from memory.seedgate import gate_types, is_exception_name, stated_error_types
from retrospectives.facts import symptom_of
from tests.memory.keyword_vectors import LESSONS, unit

VECTORS = {
    **LESSONS,
    "NEAR_A": unit(0.7),  # 0.7 to A (a ValueError lesson), nothing to B
    "BOTH": unit(0.7, 0.45),  # 0.7 to A, 0.45 to B (a KeyError lesson)
}


def _embedder() -> KeywordEmbedder:
    return KeywordEmbedder(VECTORS, model_id="test/keyword-stated")


A = LessonDraft(scope="s", error_type="ValueError", symptom="money SYMPTOM_A",
                root_cause="CAUSE_A", fix="fix A")  # fmt: skip
B = LessonDraft(scope="s", error_type="KeyError", symptom="header SYMPTOM_B",
                root_cause="CAUSE_B", fix="fix B")  # fmt: skip


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    store = Memory.open(str(tmp_path / "store"), embedder=_embedder(), min_similarity=0.4)
    store.add_many([A, B])
    yield store
    store.close()


def _recall(memory: Memory, text: str, **kw: object) -> list[str]:
    query = LessonQuery(text=text, scope="s", **kw)  # type: ignore[arg-type]
    return [h.lesson.error_type for h in memory.recall(query)]


INDEX_ERROR = "kind: runtime_error (IndexError)\nwhere: solution.py:4\nmessage: NEAR_A list index"


def test_a_seed_query_stating_another_error_gets_no_lesson(memory: Memory) -> None:
    # A is at 0.7, far above the cut, but memory has never seen an IndexError.
    assert _recall(memory, INDEX_ERROR, stage="seed") == []
    # Without the stated types the seed stage answered it (what the gate changes).
    memory.recall_config = dataclasses.replace(memory.recall_config, seed_stated_types=False)
    assert _recall(memory, INDEX_ERROR, stage="seed") == ["ValueError"]


def test_a_seed_query_stating_a_known_error_keeps_its_hits(memory: Memory) -> None:
    crash = "kind: runtime_error (ValueError)\nmessage: ValueError: NEAR_A could not convert"
    assert _recall(memory, crash, stage="seed") == ["ValueError"]
    # The gate opens on one lesson of the stated types, then every type is ranked (A first).
    key = "kind: runtime_error (KeyError)\nwhere: solution.py:3\nmessage: BOTH 'amount'"
    assert _recall(memory, key, stage="seed") == ["ValueError", "KeyError"]


@pytest.mark.parametrize(
    "text",
    [
        'Traceback (most recent call last):\n  File "solution.py", line 3, in <module>\n'
        "json.decoder.JSONDecodeError: NEAR_A Expecting value",
        "runtime error TypeError at solution.py:8: NEAR_A unsupported operand",
        "NEAR_A\nZeroDivisionError",
    ],
    ids=["traceback", "symptom template", "bare exception line"],
)
def test_every_form_of_a_stated_error_gates(memory: Memory, text: str) -> None:
    assert _recall(memory, text, stage="seed") == []
    assert _recall(memory, text, stage="seed", min_similarity=0.4) == ["ValueError"]


def test_a_task_start_states_no_error_and_stays_ungated(memory: Memory) -> None:
    # The goal mentions an exception inside a sentence, and the input is a log of tracebacks:
    # neither states the query's own error.
    head = "--- app.log ---\nTraceback (most recent call last):\nIndexError: list index"
    goal = "Count the NEAR_A failures in app.log; raise IndexError on an empty log."
    text = f"{goal}\n{head}"
    assert _recall(memory, text, surface=(head,), stage="seed") == ["ValueError"]
    # The same log line sent as the query's own text states an IndexError.
    assert _recall(memory, f"NEAR_A\n{head}", stage="seed") == []


def test_an_exception_alone_also_states_the_kind_the_loop_would_send(memory: Memory) -> None:
    # A lesson filed under the kind alone (no exception name) opens the gate for a traceback's
    # exception line, as the loop's (error type, kind) pair opens it at reflection.
    memory.add(LessonDraft(scope="s", error_type="runtime_error", symptom="killed NEAR_A",
                           root_cause="CAUSE_C", fix="fix C"))  # fmt: skip
    text = "NEAR_A\nZeroDivisionError: division by zero"
    assert _recall(memory, text, stage="seed") == ["runtime_error", "ValueError"]


def test_reflection_keeps_its_own_types(memory: Memory) -> None:
    # The loop's types win over the text's (it knows the failure); a query that states
    # nothing at reflection is not gated on the text either.
    assert _recall(memory, INDEX_ERROR, stage="reflection", error_types=("ValueError",)) == [
        "ValueError"
    ]
    assert _recall(memory, INDEX_ERROR, stage="reflection") == ["ValueError"]


CRASH = Feedback(kind="runtime_error", stage="execution", summary="Traceback ...",
                 error_type="ValueError", location="solution.py:8",
                 key_message="ValueError: could not convert string to float: '$860.45'",
                 input_evidence="values of column 'amount': '$860.45'")  # fmt: skip
CHECK = Feedback(kind="check_failed", stage="execution", summary="totals differ",
                 key_message="total for 'Acme' is 1299.99, expected 1300.0")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CRASH.compressed(), ("runtime_error", "ValueError")),
        (CHECK.compressed(), ("check_failed",)),
        (symptom_of(CRASH), ("runtime_error", "ValueError")),
        ("message: KeyError: 'qty'", ("KeyError", "runtime_error")),
        ("socket stuff\nurllib.error.HTTPError: HTTP Error 404", ("HTTPError", "runtime_error")),
        (
            "  File 'x.py', line 2\nIndentationError: unexpected indent",
            ("IndentationError", "syntax_error"),
        ),
        ("MemoryError", ("MemoryError", "resource_error")),
        ("kind: check_failed\nmessage: AssertionError: 3 != 4", ("check_failed", "AssertionError")),
        ("kind: success", ()),
        ("Warning: large file\nError: see below\nNote: nothing", ()),
        ("DeprecationWarning: use x", ()),
        ("Parse the dates, raising ValueError on a bad row.", ()),
        ("check failed Totals: differ", ()),
        # A docstring's Raises section specifies; it reports no failure.
        (
            'def f(x):\n    """Parse x.\n\n    Raises:\n        ValueError: if x is empty.\n'
            '        KeyError\n    """',
            (),
        ),
        ("Parse x.\n\nRaises\n------\nValueError\n    If x is empty.\nTypeError\n", ()),
        ("Raises:\n    ValueError: if empty.\n\nKeyError: 'qty'", ("KeyError", "runtime_error")),
        ("    Raises:\nValueError: bad input", ("ValueError", "runtime_error")),
        ("\tRaises:\n\t\tValueError: if x is empty.\n", ()),
        ("Raises:\r\n    ValueError: if x is empty.\r\n", ()),
    ],
)
def test_stated_error_types(text: str, expected: tuple[str, ...]) -> None:
    assert stated_error_types(text) == expected


def test_the_surface_views_state_nothing() -> None:
    head = "--- log.txt ---\nKeyError: 'x'"
    assert stated_error_types(f"Summarise the log.\n{head}", (head,)) == ()
    assert stated_error_types(f"KeyError: 'y'\n{head}", (head,)) == ("KeyError", "runtime_error")


def test_exception_names() -> None:
    assert is_exception_name("StopIteration") and is_exception_name("JSONDecodeError")
    assert not is_exception_name("Error") and not is_exception_name("UserWarning")
    assert not is_exception_name("Totals")


def test_the_query_s_types_come_first_and_only_seed_queries_are_read() -> None:
    text = "KeyError: 'x'"
    assert gate_types(LessonQuery(text=text, error_types=("ValueError",))) == {"ValueError"}
    assert gate_types(LessonQuery(text=text)) == {"KeyError", "runtime_error"}
    assert gate_types(LessonQuery(text=text), stated=False) == frozenset()
    assert gate_types(LessonQuery(text=text, stage="reflection")) == frozenset()
    assert gate_types(LessonQuery(text=text, min_similarity=0.3)) == frozenset()
