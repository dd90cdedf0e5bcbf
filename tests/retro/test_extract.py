"""The retrospective's rules, with trajectories built directly and a scripted model."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from agent.candidate import Candidate
from agent.errors import BackendError
from agent.feedback import Feedback
from agent.llm.base import Message
from agent.llm.scripted import ScriptedLLM, ScriptExhaustedError
from agent.stopping import UNREADABLE_CRITIC
from retrospectives.extract import (
    FALLBACK_CONTRADICTS_DIFF,
    FALLBACK_INVALID,
    FALLBACK_UNAVAILABLE,
    FALLBACK_UNGROUNDED,
    NO_MODEL,
    RetroConfig,
    Retrospective,
    extract,
)
from retrospectives.facts import candidate_diff, failure_steps, symptom_of
from tests.retro.builders import (
    CRASH,
    GOOD,
    LESSON_SYS,
    OK,
    VALUE_ERROR,
    WRONG_TOTAL,
    analysis,
    candidate,
    fixed_once,
    record,
    run,
)


def test_first_round_pass_without_recall_writes_no_lesson() -> None:
    llm = ScriptedLLM([])
    assert extract(run(record(1, candidate(GOOD), OK)), llm=llm, injected=()) == []
    assert llm.calls == []  # no model call either


def test_first_round_pass_with_recalled_lesson_writes_no_new_lesson() -> None:
    result = run(record(1, candidate(GOOD), OK, recalled=("L1",)))
    assert extract(result, llm=ScriptedLLM([]), injected=()) == []


def test_fixed_failure_yields_one_model_written_candidate_lesson() -> None:
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis()]})
    outcome = Retrospective(llm).analyse(fixed_once(recalled=("L7",)), injected=("L9",))
    (draft,) = outcome.drafts
    assert draft.status == "candidate" and draft.scope == "demo"
    assert draft.error_type == "ValueError"
    assert "solution.py:3" in draft.symptom and "'$5'" in draft.symptom
    assert draft.root_cause.startswith("amount strings carry a currency sign")
    assert draft.applies_when == "parsing money columns read from CSV files"
    assert draft.injected_lesson_ids == ("L7", "L9")
    (evidence,) = draft.evidence
    assert evidence.run_id == "run-1" and "round 1" in evidence.excerpt
    assert outcome.fallbacks == () and outcome.usage.calls == 1
    prompt = llm.calls[0].messages[-1].content
    assert "-total = sum(float(r[1]) for r in rows)" in prompt  # the real diff
    assert "strip the currency sign before float()" in prompt  # the refiner's note
    assert outcome.summary is not None and outcome.summary.rounds == 2


@pytest.mark.parametrize(
    "replies",
    [
        ["not json at all", "still not json"],
        ['{"root_cause": "x"}', '{"fix": "y"}'],  # schema-invalid twice
        [analysis(root_cause="<why it failed>")] * 2,  # a placeholder echoed back
        # the prompt's example echoed back (another case and spacing: still a copy)
        [analysis(fix="Default the argument to None and create a  new list INSIDE the function")]
        * 2,
        # the example's sentence with this task's words appended (the 1.5B did, in the demo)
        [
            analysis(
                applies_when="Functions that take an optional list or dict argument and "
                "attempt to convert string values to float."
            )
        ]
        * 2,
        # a one-word cause, then the repair turn's complaint written back as the cause
        [
            analysis(root_cause="ValueError"),
            analysis(root_cause="Value error, write a full sentence (at least three words)"),
        ],
    ],
)
def test_invalid_model_output_falls_back_to_the_deterministic_draft(replies: list[str]) -> None:
    llm = ScriptedLLM.by_system({LESSON_SYS: replies})
    outcome = Retrospective(llm).analyse(fixed_once())
    (draft,) = outcome.drafts
    assert draft.evidence[0].excerpt.startswith(f"[{FALLBACK_INVALID}")
    assert outcome.fallbacks and outcome.fallbacks[0].startswith(FALLBACK_INVALID)
    assert draft.root_cause == "amounts carry '$'"  # the refiner's own "Root cause:" line
    assert "strip the currency sign before float()" in draft.fix
    assert "replace `total = sum(float(r[1]) for r in rows)`" in draft.fix  # from the diff
    assert "ValueError" in draft.applies_when and draft.status == "candidate"
    assert outcome.usage.calls == 2  # the failed attempt and its repair are still billed


def test_no_model_gives_deterministic_drafts() -> None:
    outcome = Retrospective(None).analyse(fixed_once())
    assert outcome.drafts[0].evidence[0].excerpt.startswith(f"[{NO_MODEL}]")
    assert outcome.drafts[0].fix


def test_backend_failure_does_not_crash_the_retrospective() -> None:
    def down(_: Sequence[Message]) -> str:
        raise BackendError("connection refused")

    outcome = Retrospective(ScriptedLLM([down])).analyse(fixed_once())
    assert outcome.fallbacks[0].startswith(FALLBACK_UNAVAILABLE)
    assert len(outcome.drafts) == 1


def test_our_own_bugs_propagate() -> None:
    with pytest.raises(ScriptExhaustedError):
        Retrospective(ScriptedLLM([])).analyse(fixed_once())


def test_unsolved_run_writes_no_advice_and_asks_no_model() -> None:
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, candidate(CRASH + "\n", "cast to int"), VALUE_ERROR),
        passed=False,
        unresolved=("could not convert string to float: '$5'",),
    )
    llm = ScriptedLLM([])  # any call would raise: an unsolved run needs no analysis
    assert Retrospective(llm).analyse(result).drafts == ()
    assert extract(result, llm=None) == []


def test_a_fix_the_diff_contradicts_loses_to_the_diff() -> None:
    llm = ScriptedLLM.by_system(
        {LESSON_SYS: [analysis(fix="Parse amounts with `Decimal(value)` instead of float.")]}
    )
    outcome = Retrospective(llm).analyse(fixed_once())
    (draft,) = outcome.drafts
    assert "Decimal" not in draft.fix and "verified change:" in draft.fix
    assert outcome.fallbacks[0].startswith(FALLBACK_CONTRADICTS_DIFF)


def test_advice_to_handle_errors_loses_when_what_passed_caught_nothing() -> None:
    advice = "Check each amount; if it is not a number, handle the error gracefully."
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(fix=advice)]})
    outcome = Retrospective(llm).analyse(fixed_once())
    (draft,) = outcome.drafts
    assert "gracefully" not in draft.fix and "verified change:" in draft.fix
    assert outcome.fallbacks[0].startswith(FALLBACK_CONTRADICTS_DIFF)
    # The same advice stands when the program that passed does catch the error.
    guarded = GOOD.replace(
        "total = sum(float(r[1].strip().lstrip('$')) for r in rows)",
        "try:\n    total = sum(float(r[1].strip().lstrip('$')) for r in rows)\n"
        "except ValueError:\n    total = 0.0",
    )
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, candidate(guarded, "strip the sign"), OK),
    )
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(fix=advice)]})
    (draft,) = Retrospective(llm).analyse(result).drafts
    assert draft.fix.startswith("Check each amount")


def test_a_claim_about_data_the_run_did_not_have_gives_way_to_the_facts() -> None:
    # A root cause copied from a recalled BOM lesson, on '$' data without a BOM.
    bom = "The input file starts with a byte order mark (BOM) that breaks the reader."
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(root_cause=bom)]})
    result = fixed_once().model_copy(update={"input_marks": ("$", "¤")})
    outcome = Retrospective(llm).analyse(result)
    (draft,) = outcome.drafts
    assert "BOM" not in draft.root_cause and "'$'" in draft.root_cause  # the refiner's cause
    assert draft.fix.startswith("strip '$' and spaces")  # grounded: '$' is in the data
    assert outcome.fallbacks == (f"{FALLBACK_UNGROUNDED} (ufeff)",)
    # The same words on data with a BOM, or on a run whose input is not known, stand.
    for marks in (("ufeff", "$"), None):
        llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(root_cause=bom)]})
        known = fixed_once().model_copy(update={"input_marks": marks})
        outcome = Retrospective(llm).analyse(known)
        assert outcome.drafts[0].root_cause == bom and outcome.fallbacks == ()


def test_grounding_counts_any_currency_and_no_strftime_percent() -> None:
    general = "Strip any currency sign ('$', '€', '£') and parse dates with '%Y-%m-%d'."
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(fix=general)]})
    result = fixed_once().model_copy(update={"input_marks": ("$", "¤")})
    outcome = Retrospective(llm).analyse(result)
    assert outcome.drafts[0].fix.startswith("Strip any currency sign") and outcome.fallbacks == ()
    # A ';' named as the delimiter of '$' data that has none is not kept.
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(fix="Split each line on ';' first.")]})
    outcome = Retrospective(llm).analyse(result)
    assert "';'" not in outcome.drafts[0].fix and "verified change:" in outcome.drafts[0].fix
    assert outcome.fallbacks == (f"{FALLBACK_UNGROUNDED} (;)",)


@pytest.mark.parametrize(
    ("text", "goal", "after"),
    [
        # The program wrote the BOM: the fix's code names it.
        ("It opened the output with a BOM; write it without a BOM.", "", "utf-8-sig"),
        # The goal asks for the symbol in the output.
        ("Format the share as '12.5%' as the goal asks.", "Write shares as '12.5%'.", ""),
        ("Write totals as '$1,234.00'.", "Write totals like '$1,234.00'.", ""),
    ],
)
def test_data_the_goal_or_the_fix_names_is_grounded(text: str, goal: str, after: str) -> None:
    fixed = GOOD + (f"\nopen('out.csv', 'w', encoding='{after}')" if after else "")
    before = CRASH + ("\nopen('out.csv', 'w', encoding='utf-8')" if after else "")
    result = run(
        record(1, candidate(before), WRONG_TOTAL), record(2, candidate(fixed, "fix it"), OK)
    ).model_copy(update={"input_marks": (), "goal": goal or "Sum the amounts."})
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(root_cause=text)]})
    outcome = Retrospective(llm).analyse(result)
    assert outcome.drafts[0].root_cause == text and outcome.fallbacks == ()


def test_the_facts_drop_a_refiner_note_copied_from_a_lesson_about_other_data() -> None:
    copied = "remove the BOM from the input file before reading it"
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, candidate(GOOD, copied, "the file has a BOM"), OK),
    ).model_copy(update={"input_marks": ("$", "¤")})
    (draft,) = Retrospective(None).analyse(result).drafts
    assert "BOM" not in draft.root_cause and "BOM" not in draft.fix
    assert draft.fix.startswith("verified change:")


def test_a_round_the_loop_went_back_from_teaches_nothing() -> None:
    # Round 1 got far (a wrong total); round 2 crashed on a bug of its own (worse), so round 3
    # repaired round 1 again and passed. Only round 1's failure was fixed by the pass.
    message = "KeyError: 'missing'"
    key_error = VALUE_ERROR.model_copy(
        update={"summary": message, "key_message": message, "error_type": "KeyError"}
    )
    wrong = GOOD.replace("lstrip('$')", "lstrip('$')[:-1]")
    result = run(
        record(1, candidate(wrong), WRONG_TOTAL),
        record(2, candidate(wrong + "\nx = {}['missing']", "look it up"), key_error),
        record(3, candidate(GOOD, "keep every digit", "the last digit was cut"), OK).model_copy(
            update={"repairs": 1}
        ),
    )
    (draft,) = Retrospective(None).analyse(result).drafts
    assert draft.error_type == "AssertionError" and "keep every digit" in draft.fix
    # Round 2's crash was repaired by nothing: no cause taken from round 3's reply.
    crash = next(s for s in failure_steps(result) if s.feedback.error_type == "KeyError")
    assert not crash.resolved and crash.stated_cause is None
    assert "missing" not in draft.fix and "[:-1]" in draft.fix
    assert draft.root_cause == "the last digit was cut"  # the repair of round 1 said so


def test_a_pass_that_repaired_the_runner_up_is_learned_from_the_runner_up() -> None:
    # Round 1 chose a program that ran and got a wrong total; its runner-up crashed on '$5'.
    # Round 2's pass repaired the runner-up (a refine_alt draw): the crash is what it fixed,
    # with the runner-up's change, and the chosen program's wrong total was fixed by nothing.
    runner_up = record(1, candidate(CRASH), VALUE_ERROR)
    chosen = candidate(GOOD.replace("lstrip('$')", "lstrip('$')[:-1]") + "\nprint(total)")
    result = run(
        record(1, chosen, WRONG_TOTAL),
        record(2, candidate(GOOD, "strip the sign"), OK).model_copy(update={"repaired": runner_up}),
    )
    assert result.attempts == (result.rounds[0], runner_up, result.rounds[1])
    total, crash = sorted(failure_steps(result), key=lambda s: s.feedback.kind)
    assert crash.feedback.kind == "runtime_error" and crash.resolved and crash.fixed_in == 2
    assert not total.resolved
    # The change is the runner-up's to the pass: the '$' strip, nothing of the chosen's.
    assert "lstrip('$')" in crash.diff and "[:-1]" not in crash.diff and "print" not in crash.diff
    (draft,) = Retrospective(None).analyse(result).drafts
    assert draft.error_type == "ValueError" and "lstrip('$')" in draft.fix


def test_a_go_back_to_a_chosen_program_does_not_pass_through_its_runner_up() -> None:
    # Round 2 repaired round 1's runner-up and crashed elsewhere; round 3 went back to round
    # 1's chosen program and passed: that wrong total is what the pass fixed, not the '$'.
    message = "KeyError: 'missing'"
    key_error = VALUE_ERROR.model_copy(
        update={"summary": message, "key_message": message, "error_type": "KeyError"}
    )
    wrong = GOOD.replace("lstrip('$')", "lstrip('$')[:-1]")
    runner_up = record(1, candidate(CRASH), VALUE_ERROR)
    result = run(
        record(1, candidate(wrong), WRONG_TOTAL),
        record(2, candidate(CRASH + "\nx = {}['missing']"), key_error).model_copy(
            update={"repaired": runner_up}
        ),
        record(3, candidate(GOOD, "keep every digit"), OK).model_copy(update={"repairs": 1}),
    )
    steps = {s.feedback.kind + (s.feedback.error_type or ""): s for s in failure_steps(result)}
    assert steps["check_failedAssertionError"].fixed_in == 3
    assert not steps["runtime_errorValueError"].resolved
    assert not steps["runtime_errorKeyError"].resolved


def test_a_model_fix_keeps_the_verified_change_beside_it() -> None:
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(fix="Strip the currency sign first.")]})
    (draft,) = Retrospective(llm).analyse(fixed_once()).drafts
    assert draft.fix.startswith("Strip the currency sign first") and "verified change:" in draft.fix


def test_multi_round_run_yields_one_lesson_per_failure_and_a_summary_not_stored() -> None:
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, candidate(CRASH + "\n#a", "strip '$'"), WRONG_TOTAL),
        record(3, candidate(GOOD + "\ntotal = int(total)", "keep cents"), WRONG_TOTAL),
        record(4, candidate(GOOD, "round to 2 places"), OK),
    )
    llm = ScriptedLLM.by_system(
        {LESSON_SYS: [analysis(), analysis(fix="keep the decimals of every amount")]}
    )
    outcome = Retrospective(llm).analyse(result)
    types = [d.error_type for d in outcome.drafts]
    # The summary's advice is the costliest failure's own lesson: no goal-keyed copy of it.
    assert types == ["ValueError", "AssertionError"]
    summary = outcome.summary
    assert summary is not None and summary.passed and summary.rounds == 4
    assert summary.costliest.startswith("check_failed/AssertionError (2 of 4 rounds")
    assert summary.what_worked == "round 4: round to 2 places"
    assert summary.first_next_time.startswith("when parsing money columns")
    assert "keep the decimals of every amount" in summary.first_next_time


def test_max_lessons_keeps_the_costliest_failures() -> None:
    result = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, candidate(CRASH + "\n#a"), WRONG_TOTAL),
        record(3, candidate(GOOD + "\ntotal = int(total)"), WRONG_TOTAL),
        record(4, candidate(GOOD), OK),
    )
    cfg = RetroConfig(max_lessons=1)
    (draft,) = extract(result, llm=None, config=cfg)
    assert draft.error_type == "AssertionError"


def test_unreadable_critic_verdict_is_not_a_lesson() -> None:
    unreadable = Feedback(
        kind="critic_rejected",
        stage="critic",
        summary="?",
        key_message=UNREADABLE_CRITIC,
        issues=("critic verdict unreadable (not evidence of a defect)",),
    )
    result = run(record(1, candidate(GOOD), unreadable), record(2, candidate(GOOD + "\n"), OK))
    assert extract(result, llm=ScriptedLLM([])) == []


def test_evidence_excerpt_is_redacted_and_bounded() -> None:
    leak = VALUE_ERROR.model_copy(
        update={"key_message": "auth failed: sk-abcdefghijklmnopqrstuvwxyz123456 " * 5}
    )
    result = run(record(1, candidate(CRASH), leak), record(2, candidate(GOOD), OK))
    (draft,) = extract(result, llm=None, config=RetroConfig(excerpt_chars=150))
    excerpt = draft.evidence[0].excerpt
    assert "sk-abc" not in excerpt and "[REDACTED]" in excerpt and len(excerpt) <= 150
    assert "sk-abc" not in draft.symptom


def test_candidate_diff_is_bounded() -> None:
    before = Candidate(files={"a.py": "\n".join(f"x{i}" for i in range(200))}, text="")
    after = Candidate(files={"a.py": "\n".join(f"y{i}" for i in range(200))}, text="")
    diff = candidate_diff(before, after, max_lines=10)
    assert len(diff.splitlines()) == 11 and diff.endswith("more diff lines)")


def test_text_candidates_are_diffed_by_text() -> None:
    diff = candidate_diff(Candidate(files={}, text="a\nb"), Candidate(files={}, text="a\nc"))
    assert "-b" in diff and "+c" in diff


def test_a_change_in_comments_only_verifies_nothing() -> None:
    result = run(
        record(1, candidate(GOOD + "\n# first try"), WRONG_TOTAL),
        record(2, candidate(GOOD + '\n"""second try"""'), OK),
    )
    assert extract(result, llm=None) == []


def test_verified_change_keeps_code_that_starts_with_a_string() -> None:
    from retrospectives.change import diff_summary

    diff = (
        '-    "total": sum(float(r["amount"]) for r in rows),\n'
        '+    """Amounts may carry a currency sign."""\n'
        "+    # strip it first\n"
        '+    "total": sum(float(r["amount"].lstrip("$")) for r in rows),\n'
    )
    assert diff_summary(diff) == (
        'replace `"total": sum(float(r["amount"]) for r in rows),` with '
        '`"total": sum(float(r["amount"].lstrip("$")) for r in rows),`'
    )


def test_verified_change_shows_whole_lines_and_counts_the_rest() -> None:
    from retrospectives.change import diff_summary

    added = [
        'with open(path, "rb") as f:',
        "raw = f.read()",
        "try:",
        'return raw.decode("utf-8")',
        "except UnicodeDecodeError:",
        'return raw.decode("cp1252")',
    ]
    diff = '-    with open(path, encoding="utf-8") as f:\n-    return f.read()\n' + "".join(
        f"+    {line}\n" for line in added
    )
    text = diff_summary(diff, limit=300)
    # The decode fallback, past the third line, is shown; the bare `try:` is not.
    assert 'return raw.decode("cp1252")' in text and "`try:`" not in text
    assert "..." not in text and "(+" not in text

    short = diff_summary(diff, limit=120)
    assert short.endswith("lines)") and "..." not in short
    shown = short.count("`") // 2
    counted = sum(int(n) for n in re.findall(r"(?:\(\+|rewrite )(\d+) lines?", short))
    assert shown >= 2 and shown + counted == 2 + 5  # each code line shown or counted, once


def test_a_secret_in_a_line_cut_to_fit_is_redacted_before_the_cut() -> None:
    from retrospectives.change import diff_summary

    token = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJXNjROcDJBa3RVIiwicm9sZSI6ImFkbWluIn0"
        ".N7r3m4nS-6398JGsXQFaxMMWbdLJENMCb9HEHcyPNBE"
    )
    diff = f'-CONFIG = "401 Unauthorized: token {token} expired"\n+CONFIG = ""\n'
    for limit in (60, 120, 300):  # the removed line cut at several places, or whole
        text = diff_summary(diff, limit=limit)
        assert not any(token[i : i + 10] in text for i in range(len(token) - 9)), text


def test_a_long_fix_gives_way_to_the_verified_change() -> None:
    from retrospectives.change import diff_summary
    from retrospectives.extract import CHANGE_MARK, with_change

    diff = "-    return float(text)\n+    return float(text.replace('$', '').replace(',', ''))\n"
    change = diff_summary(diff)
    fix = with_change("Strip the symbols first. " * 40, change)
    assert len(fix) <= 500
    assert fix.endswith(
        f"{CHANGE_MARK} replace `return float(text)` with "
        "`return float(text.replace('$', '').replace(',', ''))`"
    )
    assert with_change("", change).startswith(CHANGE_MARK)
    # Prose that does not fit ends on a whole sentence, or on a whole word and "...": a fix
    # stored in the stream read "... (i.e., it is an empty string), we sk. verified change".
    long_change = diff_summary("-a = 1\n+a = 2\n" * 3)
    cut = with_change("Check each score first. " + "then skip the empty value " * 30, change)
    assert cut.startswith(f"Check each score first. {CHANGE_MARK}")
    one = with_change("skip the empty value " * 40, long_change)
    prose = one.split(f" {CHANGE_MARK}")[0]
    assert not prose.endswith("....")
    assert with_change("Did it parse?", long_change).startswith(f"Did it parse? {CHANGE_MARK}")
    assert with_change("Split each line on ;", change).startswith("Split each line on ;. ")
    # A stored fix read "Here's the updated code:. verified change: ...".
    assert with_change("Here's the updated code:", change).startswith(
        f"Here's the updated code. {CHANGE_MARK}"
    )
    assert prose.endswith("...") and prose[:-3].split()[-1] in {"skip", "the", "empty", "value"}
    assert len(one) <= 500


def test_quoting_the_replaced_code_is_no_contradiction() -> None:
    fixed = fixed_once()
    removed = next(
        ln[1:].strip()
        for ln in candidate_diff(fixed.rounds[0].candidate, fixed.rounds[1].candidate).splitlines()
        if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()
    )
    llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(fix=f"Do not call `{removed}` as is.")]})
    outcome = Retrospective(llm).analyse(fixed)
    assert outcome.fallbacks == () and outcome.drafts[0].fix.startswith("Do not call")


def test_the_summary_says_what_to_do_first_from_the_verified_advice() -> None:
    # Rounds 1-3 crash the same way, round 4 passes with a code change: verified, costliest.
    crash2, crash3 = CRASH + "\nx = 2", CRASH + "\nx = 3"
    verified_run = run(
        record(1, candidate(CRASH), VALUE_ERROR),
        record(2, candidate(crash2), VALUE_ERROR),
        record(3, candidate(crash3), VALUE_ERROR),
        record(4, candidate(GOOD, "strip '$'"), OK),
    )
    when = analysis(applies_when="When amounts come from a CSV export.")
    outcome = Retrospective(ScriptedLLM.by_system({LESSON_SYS: [when]})).analyse(verified_run)
    summary = outcome.summary
    assert summary is not None and summary.costliest_verified
    # "when amounts ...", not "when When amounts ..."
    assert summary.first_next_time.startswith("when amounts come from a CSV export:")
    assert "verified change:" in summary.first_next_time
    assert [d.error_type for d in outcome.drafts] == ["ValueError"]
    # The model's sentence case does not leak into the middle of the line.
    for written, shown in (("Functions that parse money.", "when functions that parse money:"),
                           ("CSV exports from Excel", "when CSV exports from Excel:"),
                           ("A CSV export quotes amounts", "when a CSV export quotes amounts:"),
                           ("I/O on a CSV fails", "when I/O on a CSV fails:")):  # fmt: skip
        llm = ScriptedLLM.by_system({LESSON_SYS: [analysis(applies_when=written)]})
        summary = Retrospective(llm).analyse(verified_run).summary
        assert summary is not None and summary.first_next_time.startswith(shown)


def test_the_symptom_says_where_the_value_sits_in_the_input_rather_than_the_code_line() -> None:
    # What travels to another task is the data's surface, not this program's variables.
    crashed = VALUE_ERROR.model_copy(update={"failing_example": "total += float(row['amount'])"})
    seen = crashed.model_copy(
        update={"input_evidence": "values of column 'amount' in a.csv: '$5', '$1,200.50'"}
    )
    assert "in the input: values of column 'amount'" in symptom_of(seen)
    assert "'$1,200.50'" in symptom_of(seen)
    assert "total += float" not in symptom_of(seen)
    assert "total += float" in symptom_of(crashed)


def test_a_rewritten_function_shows_the_line_that_did_the_work() -> None:
    from retrospectives.change import diff_summary

    # A refiner rewrote the whole function: new names, a new loop, and one real change.
    removed = [
        "def load_rates(path):",
        "table = {}",
        "with open(path, newline='') as handle:",
        "for record in csv.DictReader(handle):",
        "code = record['code']",
        "table[code] = float(record['rate'])",
        "return table",
    ]
    added = [
        "def read_rate_table(filename):",
        "rates = {}",
        "with open(filename) as fh:",
        "rows = list(csv.DictReader(fh))",
        "for row in rows:",
        "key = row['code']",
        "rates[key] = float(row['rate'].rstrip('%')) / 100",
        "return rates",
    ]
    diff = "".join(f"-    {ln}\n" for ln in removed) + "".join(f"+    {ln}\n" for ln in added)
    text = diff_summary(diff, limit=200)
    # Neither side fits: the old lines are only counted, the room goes to the new ones.
    assert text.startswith(f"rewrite {len(removed)} lines as ") and "(+" in text
    assert "`rates[key] = float(row['rate'].rstrip('%')) / 100`" in text
    assert "def read_rate_table" not in text  # a renamed signature tells nothing
    shown = text.count("`") // 2
    counted = sum(int(n) for n in re.findall(r"\(\+(\d+) lines?\)", text))
    assert shown + counted == len(added)
    many = diff + "".join(f"+    total_{i} = rates.get('r{i}', {i}) * 100\n" for i in range(150))
    for limit in (120, 200, 300):
        assert len(diff_summary(many, limit=limit)) <= limit


def test_a_comment_edit_is_no_change_and_a_moved_line_is_one() -> None:
    from retrospectives.change import diff_summary

    diff = (
        "-total = float(row['net'].replace(',', ''))  # drop the separator\n"
        "-tax = float(row['tax'])\n"
        "+total = float(row['net'].replace(',', ''))  # drop separators\n"
        "+tax = float(row['tax'].replace(',', ''))  # drop separators\n"
    )
    assert diff_summary(diff) == (
        "replace `tax = float(row['tax'])` with `tax = float(row['tax'].replace(',', ''))`"
    )
    assert diff_summary("-x = 1  # one\n+x = 1  # uno\n") == ""
    moved = "-        total += amount\n+    total += amount\n"
    assert diff_summary(moved) == "replace `total += amount` with `total += amount`"


def test_marks_ignore_names_and_quote_style() -> None:
    from retrospectives.change import _marks

    assert _marks("json.dump(report, out, indent=2)") == {".dump", "dump(indent=", "lit:2"}
    assert _marks("x = open(p, 'r')") == _marks('data = open(name, "r")')
    assert _marks("s = '#' + t  # hash") == {"lit:'#'", "+"}


def test_a_hash_outside_python_is_text_and_a_moved_line_is_no_comment_edit() -> None:
    from retrospectives.change import diff_summary

    report = "--- a/report.md\n+++ b/report.md\n-Total # of rows: 5\n+Total # of rows: 6\n"
    assert diff_summary(report) == "replace `Total # of rows: 5` with `Total # of rows: 6`"
    moved = "-        total += amount  # add\n+    total += amount  # add it up\n"
    assert diff_summary(moved) == "replace `total += amount` with `total += amount`"
    # A '#' after a fragment that does not tokenize (an open string) is not a comment.
    assert diff_summary("-x = 'abc # d\n+x = 'abc # e\n").count("#") == 2


def test_one_long_line_changed_is_a_replace_not_a_rewrite() -> None:
    from retrospectives.change import diff_summary

    old = "rows = [float(r['amount'].strip()) for r in csv.DictReader(handle) " + "if r" * 30
    new = old.replace(".strip()", ".replace(',', '.')")
    text = diff_summary(f"-{old}\n+{new}\n", limit=300)
    assert text.startswith("replace `rows = [float(") and " with `rows = [float(" in text
    assert len(text) <= 300 and "rewrite" not in text


def test_a_change_that_wraps_code_in_a_block_keeps_the_block_keyword() -> None:
    from retrospectives.change import diff_summary

    line = "total += float(row['score'])"
    guard = "+    except ValueError:\n+        continue\n"
    wrap = f"-    {line}\n+    try:\n+        {line}\n{guard}"
    # Without `try:` the line would read as replaced by itself.
    assert diff_summary(wrap) == (
        f"replace `{line}` with `try:`; `{line}`; `except ValueError:`; `continue`"
    )
    # Unwrapped: the block left goes on the removed side.
    unwrap = f"-    try:\n-        {line}\n-    except:\n-        pass\n+    {line}\n"
    assert diff_summary(unwrap) == f"replace `try:`; `{line}` with `{line}`"
    # Not a wrap (the old line is gone): the bare keyword tells nothing and stays out.
    new = "total += float(row['score'] or 0)"
    rewrite = f"-    {line}\n+    try:\n+        {new}\n{guard}"
    assert diff_summary(rewrite) == (
        f"replace `{line}` with `{new}`; `except ValueError:`; `continue`"
    )


def test_only_a_keyword_around_moved_code_is_kept() -> None:
    from retrospectives.change import diff_summary

    # A bare keyword that itself moved is no wrap.
    load = "x = load(p, encoding='utf-8-sig')"
    assert diff_summary(f"-    pass\n+        pass\n+    {load}\n") == f"add `{load}`"
    # An else: branch re-indented with its line changed: nothing moved into a block.
    old, new = "y = parse(v)", "y = parse(v, strict=False)"
    diff = f"-    else:\n-        {old}\n+        else:\n+            {new}\n"
    assert diff_summary(diff) == f"replace `{old}` with `{new}`"
    # A sum moved out of its loop in one hunk does not bring back another hunk's if/else.
    diff = (
        "-        total = sum(vals)\n+    total = sum(vals)\n"
        "-    if x:\n-        y = 1\n-    else:\n-        y = 2\n+    y = 1 if x else 2\n"
    )
    text = diff_summary(diff)
    assert "`else:`" not in text and "`y = 1 if x else 2`" in text
