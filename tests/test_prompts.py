"""Every prompt template renders, and each feedback kind has its own reflection guidance."""

from __future__ import annotations

from typing import get_args

import pytest

from agent import prompts
from agent.candidate import Candidate, changed_lines, parse_candidate
from agent.feedback import FeedbackKind


def test_generator_renders_goal_files_workspace_and_lessons() -> None:
    text = prompts.render_generator(
        "Sum the amounts", ["solution.py"], {"orders.csv": "id,amount\n1,$5"}, "PAST LESSONS"
    )
    assert "Sum the amounts" in text and "solution.py" in text
    assert "orders.csv" in text and "$5" in text and "PAST LESSONS" in text


def test_generator_system_prompt_asks_for_no_self_assessment() -> None:
    assert "review" not in prompts.GENERATOR_SYSTEM.lower()
    assert "confiden" not in prompts.GENERATOR_SYSTEM.lower()


def test_critic_renders_numbered_checklist() -> None:
    text = prompts.render_critic("goal", ["a", "b"], "answer")
    assert "1. a\n2. b" in text and "answer" in text


@pytest.mark.parametrize("kind", get_args(FeedbackKind))
def test_refiner_renders_kind_guidance_tried_fixes_and_previous(kind: FeedbackKind) -> None:
    text = prompts.render_refiner(
        goal="g",
        previous="PREV",
        round_no=2,
        feedback="kind: x",
        kind=kind,
        tried=["used float()"],
        lessons="",
        passed_external=False,
    )
    assert prompts.KIND_GUIDANCE[kind] in text
    assert "PREV" in text and "used float()" in text and "do not repeat" in text
    assert prompts.EVIDENCE_GUIDANCE not in text  # only when the feedback shows the input


def refiner_for_crash(workspace: dict[str, str] | None = None) -> str:
    return prompts.render_refiner(
        goal="g",
        previous="PREV",
        round_no=1,
        feedback="kind: x",
        kind="runtime_error",
        tried=[],
        lessons="",
        passed_external=False,
        workspace=workspace,
    )


def test_refiner_sees_the_input_files_before_the_attempt() -> None:
    # A crash on one input value is repaired for all of them only if the other values'
    # formats are in view ("$860.45" crashed; "$4,332.59" is next).
    text = refiner_for_crash({"a.csv": 'amount\n$860.45\n"$4,332.59"'})
    assert "--- a.csv ---" in text and "$4,332.59" in text
    assert text.index("$4,332.59") < text.index("PREV")
    assert "Input files" not in refiner_for_crash()


def test_each_kind_has_distinct_guidance() -> None:
    texts = list(prompts.KIND_GUIDANCE.values())
    assert len(set(texts)) == len(texts) == len(get_args(FeedbackKind))


def test_refiner_asks_phenomenon_then_root_cause_then_fix() -> None:
    s = prompts.REFINER_SYSTEM
    assert s.index("Phenomenon") < s.index("Root cause") < s.index("Fix")


def test_parse_candidate_maps_named_and_unnamed_blocks() -> None:
    reply = "Fix: strip the BOM\n### b.json\n```json\n{}\n```\nand\n```python\nprint(1)\n```"
    c = parse_candidate(reply, ["a.py", "b.json"])
    assert c.files == {"a.py": "print(1)\n", "b.json": "{}\n"}
    assert c.fix_note == "strip the BOM"


def test_parse_candidate_takes_the_program_after_a_comment_only_block() -> None:
    # Seen from the 1.5B model: the fences pair wrongly, the block is the comment and the
    # program sits between its closing fence and one stray fence.
    program = "import json\n\nprint(json.dumps(1))\n"
    reply = f"```python\n# Repair attempt\n### solution.py\n```\n{program}```"
    assert parse_candidate(reply, ["solution.py"]).files == {"solution.py": program}
    reopened = f"```python\n# Repair attempt\n```python\n{program}```\n"  # a second opening
    assert parse_candidate(reopened, ["solution.py"]).files == {"solution.py": program}
    # Paired fences are read as they are: prose after a comment block is no program, and a
    # comment block followed by a proper block leaves that block to the usual mapping.
    prose = "```python\n# nothing yet\n```\nThe program follows.\n```"
    assert parse_candidate(prose, ["solution.py"]).files == {"solution.py": "# nothing yet\n"}
    both = f"```python\n# plan\n```\nthen\n```python\n{program}```"
    files = parse_candidate(both, ["solution.py", "b.py"]).files
    assert files == {"solution.py": "# plan\n", "b.py": program}
    # A broken block is not comments only; text that parses ("Note: fixed" is an annotated
    # name) before an opening fence is no stray program.
    broken = "```python\ndef f(:\n```\nx = 1\n```"
    assert parse_candidate(broken, ["solution.py"]).files == {"solution.py": "def f(:\n"}
    note = "```python\n# c\n```\nNote: fixed\n```python\nx = 1"
    assert parse_candidate(note, ["solution.py"]).files == {"solution.py": "# c\n"}


def test_parse_candidate_digest_ignores_trailing_whitespace() -> None:
    a = parse_candidate("```python\nx = 1  \n```", ["s.py"])
    b = parse_candidate("```python\nx = 1\n\n```", ["s.py"])
    assert a.digest() == b.digest()


def test_changed_lines_counts_the_code_a_change_removes_and_adds() -> None:
    def program(**files: str) -> Candidate:
        return Candidate(files={k.replace("_", "."): v for k, v in files.items()}, text="")

    base = program(a_py="import csv\nrows = read()\ntotal = sum(rows)\nprint(total)\n")
    assert changed_lines(base, base) == 0
    # One line rewritten: removed and added. Indentation and blank lines are no change.
    fixed = program(a_py="import csv\nrows = read()\n\ntotal = sum(map(float, rows))\nprint(total)")
    assert changed_lines(base, fixed) == 2
    indented = program(
        a_py="import csv\nif True:\n    rows = read()\n    total = sum(rows)\nprint(total)"
    )
    assert changed_lines(base, indented) == 1
    # A file only one side has counts whole; files are compared by name.
    assert changed_lines(base, program(a_py=base.files["a.py"], b_py="x = 1\ny = 2\n")) == 2
    assert changed_lines(program(b_py="x = 1\n"), program(a_py="x = 1\n")) == 2
