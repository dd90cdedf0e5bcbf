"""agent.evidence: a crash's value looked up in the input files, and the refiner seeing it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.evidence import (
    crashed_on_data,
    crashed_on_missing,
    data_evidence,
    input_evidence,
    named_keys,
)
from agent.llm.scripted import ScriptedLLM
from agent.profile import input_profile, input_symbols
from agent.prompts import EVIDENCE_GUIDANCE
from agent.result import RunResult
from agent.rules import bom_writes, catches, imported, own_modules
from tests.helpers import GEN, REFINE, code, fix, make_task
from tests.test_loop import agent_for


def workspace(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    for name, body in files.items():
        target = ws / name
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body, encoding="utf-8")
    return ws


def test_a_crashing_cell_shows_its_columns_varied_formats_first(tmp_path: Path) -> None:
    rows = ["id,amount"] + [f"{i},${i}.50" for i in range(20)] + ['21,"$4,332.59"', "22, $99.65 "]
    ws = workspace(tmp_path, {"a.csv": "\n".join(rows) + "\n"})
    text = input_evidence("ValueError: could not convert string to float: '$3.50'", ws)
    assert text is not None and text.startswith("values of column 'amount' in a.csv")
    # Three formats ('$9.9', '$9,9.9', ' $9.9 ') are all shown, though they come last.
    assert "'$4,332.59'" in text and "' $99.65 '" in text and "of 22 distinct" in text


def test_a_header_lookup_shows_the_header_as_read(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"p.csv": "\ufeffdepartment,salary\nOps,10\n"})
    text = input_evidence("KeyError: 'department'", ws)
    assert text == "the header of p.csv as Python reads it: ['\\ufeffdepartment', 'salary']"


def test_a_column_name_met_as_a_value_says_it_is_the_header(tmp_path: Path) -> None:
    """int('qty'): the program parsed the header row as data. A lesson's symptom read "lines
    of stock.csv that contain 'qty'", and the 1.5B took 'qty' for a bad value in the column."""
    ws = workspace(tmp_path, {"stock.csv": "\ufeffsku,warehouse,qty\nA-1,north,3\n"})
    text = input_evidence("ValueError: invalid literal for int() with base 10: 'qty'", ws)
    assert text == (
        "'qty' is a column name, in the header row of stock.csv: ['\\ufeffsku', 'warehouse', 'qty']"
    )
    # A value that is also a cell of the body is the column's value, as before.
    (tmp_path / "b").mkdir()
    ws2 = workspace(tmp_path / "b", {"t.csv": "kind,n\nn,3\nx,4\n"})
    other = input_evidence("ValueError: could not convert string to float: 'n'", ws2)
    assert other is not None and other.startswith("values of column 'kind' in t.csv")


def test_a_value_outside_a_table_shows_the_lines_holding_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"s.csv": "id;weight_kg\n1;2,5\n"})
    text = input_evidence("KeyError: 'weight_kg'", ws)
    assert text is not None and "'id;weight_kg'" in text
    # The lines where the value stands on its own come first: '200' the status, not the
    # '200' inside an IPv6 address.
    log = '2001:db8::1 - "GET /a HTTP/1.1" 500 12\n10.0.0.5 - "GET / HTTP/1.1" 200 73\n'
    (tmp_path / "log").mkdir()
    shown = input_evidence("KeyError: '200'", workspace(tmp_path / "log", {"access.log": log}))
    assert shown == "lines of access.log that contain '200': '10.0.0.5 - \"GET / HTTP/1.1\" 200 73'"


def test_a_log_whose_first_line_holds_a_delimiter_is_not_read_as_a_table(tmp_path: Path) -> None:
    agent = '"Mozilla/5.0 (X11; Linux x86_64)"'
    lines = [f'10.0.0.1 - - [12/Mar/2025:08:00:00 +0000] "GET / HTTP/1.1" 500 12 "-" {agent}']
    lines += [f'10.0.0.{i} - - [12/Mar/2025:08:0{i}:00 +0000] "GET /{i} HTTP/1.1" 200 7 "-" "curl"'
              for i in range(2, 6)]  # fmt: skip
    ws = workspace(tmp_path, {"access.log": "\n".join(lines) + "\n"})
    # It was split at the ';' of its first line's user agent: 'the header as Python reads
    # it' and a 'column' named after that line, for a crash on the program's own split.
    assert data_evidence("IndexError: list index out of range", ws) is None
    shown = input_evidence("KeyError: '200'", ws) or ""
    assert shown.startswith("lines of access.log that contain '200'")


def test_a_wrong_value_under_a_key_named_after_a_column_shows_that_column(tmp_path: Path) -> None:
    """A check's wrong count quotes the output's keys: the group ('pro', a cell of 'plan') and
    the figure ('active'). The figure comes from the column it is named after, whose values
    are what the program misread ('y' and 'TRUE' counted as false)."""
    rows = "email,plan,active\na@x,pro,y\nb@x,pro,TRUE\nc@x,free,0\n"
    ws = workspace(tmp_path, {"subs.csv": rows})
    message = "result.json['pro']['active']: wrong value, got 0 (too low)"
    assert input_evidence(message, ws, check_failed=True) == (
        "values of column 'plan' in subs.csv (2 of 2 distinct, varied formats first): "
        "'pro', 'free'\n"
        "the 2 of 3 rows of subs.csv whose 'plan' is 'pro' hold 'email': 'a@x', 'b@x'; "
        "'active': 'y', 'TRUE'\n"
        "values of column 'active' in subs.csv (3 of 3 distinct, varied formats first): "
        "'y', '0', 'TRUE'; yes/no written 3 ways: 'y', 'TRUE' mean yes; '0' mean no"
    )
    # A crash quoting the same name is not about the output: the raw line, as before.
    assert input_evidence("KeyError: 'active'", ws) == (
        "lines of subs.csv that contain 'active': 'email,plan,active'"
    )
    assert input_evidence(message, ws) == (
        "values of column 'plan' in subs.csv (2 of 2 distinct, varied formats first): "
        "'pro', 'free'\nlines of subs.csv that contain 'active': 'email,plan,active'"
    )


@pytest.mark.parametrize(
    ("files", "key", "column"),
    [
        # The one column sharing a word of four letters or more.
        ({"f.csv": "product,would_recommend\nA,Yes\nB,n\n"}, "recommend_pct", "would_recommend"),
        # The column sharing the most words, wherever it stands.
        ({"o.csv": "price,order_date,unit_price_total\n1,2,3\n"}, "total_unit_price",
         "unit_price_total"),
        # Words of three letters ('max', 'avg', 'pct') name no column.
        ({"c.csv": "max_speed,cost\n1,2\n"}, "max_cost", "cost"),
        # A short name, met exactly (in another case).
        ({"s.csv": "sku,QTY\nA,1\n"}, "qty", "QTY"),
        # An exact name in a later file beats a shared word in an earlier one.
        ({"a.csv": "id,active_since\n1,2020\n", "b.csv": "plan,active\npro,y\n"}, "active",
         "active"),
    ],
)  # fmt: skip
def test_the_column_an_output_key_is_named_after(
    tmp_path: Path, files: dict[str, str], key: str, column: str
) -> None:
    text = input_evidence(f"result.json[{key!r}]: wrong value", workspace(tmp_path, files),
                          check_failed=True)  # fmt: skip
    assert text is not None and text.startswith(f"values of column {column!r} in ")


@pytest.mark.parametrize(
    ("files", "key"),
    [
        ({"o.csv": "order_date,order_id\n1,2\n"}, "order_count"),  # two columns share 'order'
        ({"t.csv": "agent,hours\nkim,2\n"}, "total"),  # no column is named so
        ({"s.csv": "email,plan,active\n"}, "active"),  # a header without values
        ({"e.jsonl": '{"user": "u2", "amount": 5.87}\n'}, "amount_due"),  # JSON: no columns
    ],
)
def test_no_column_for_an_output_key_that_names_none(
    tmp_path: Path, files: dict[str, str], key: str
) -> None:
    text = input_evidence(f"result.json[{key!r}]: wrong value", workspace(tmp_path, files),
                          check_failed=True)  # fmt: skip
    assert text is None or not text.startswith("values of column")


def test_names_in_a_crash_are_not_output_keys(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"t.csv": "agent,hours,age_group\nkim,2,a\n"})
    for message in (
        "NameError: name 'total_hours' is not defined",
        "AttributeError: 'NoneType' object has no attribute 'group'",
    ):
        assert "values of column" not in (input_evidence(message, ws) or "")


def test_a_decoding_error_shows_the_bytes_around_its_position(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"c.csv": "name\nIn\xe9s\n".encode("latin-1")})
    message = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 7: invalid"
    assert input_evidence(message, ws) == (
        "bytes around position 7 of c.csv: b'name\\nIn\\xe9s\\n'; the whole file decodes as "
        "cp1252, where that line reads 'Inés'"
    )


def test_a_decoding_error_deep_in_a_long_line_is_quoted_around_it(tmp_path: Path) -> None:
    head = "".join(f'"name{n}", ' for n in range(40))  # one long JSON line
    raw = head.encode() + '"Zoë"]'.encode("latin-1")
    ws = workspace(tmp_path, {"names.json": raw})
    at = len(head) + 3
    message = f"UnicodeDecodeError: 'utf-8' codec can't decode byte 0xeb in position {at}: x"
    quoted = (input_evidence(message, ws) or "").split("that line reads ")[1]
    assert "Zoë" in quoted and len(quoted) <= 122  # the window, in quotes


def test_a_decoding_error_reads_the_line_as_the_encoding_that_decodes_the_file(
    tmp_path: Path,
) -> None:
    # 0x81 is no cp1252 character: latin-1, which decodes any bytes, reads it.
    raw = "id,name\n1,Zoë\n".encode("latin-1") + b"2,A\x81\n"
    ws = workspace(tmp_path, {"n.csv": raw})
    message = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xeb in position 12: invalid"
    assert (input_evidence(message, ws) or "").endswith("latin-1, where that line reads '1,Zoë'")


def test_nothing_when_the_value_is_not_in_the_inputs(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"a.csv": "id,amount\n1,2\n"})
    # The checker's side of the task (expected values) sits beside the workspace: never read.
    (tmp_path / "expected.json").write_text('{"total": "$3.50"}')
    assert input_evidence("ValueError: could not convert string to float: '$3.50'", ws) is None
    assert input_evidence("ValueError: could not convert string to float: '$3.50'", None) is None
    assert input_evidence(None, ws) is None


# A program that crashes on the first amount with a '$': float('$860.45').
SUM_AMOUNTS = (
    "import csv, json\n"
    "rows = list(csv.DictReader(open('a.csv')))\n"
    "json.dump(sum(float(r['amount']) for r in rows), open('out.json', 'w'))\n"
)


def skip_run(tmp_path: Path, handler: str, rows: str, rounds: int) -> tuple[RunResult, ScriptedLLM]:
    """A run whose draft sums a.csv's amounts and crashes, and whose repair wraps the sum in
    `handler` (the small model's usual repair of a crash on the input)."""
    skip = (
        "import csv, json\ntotal = 0\nfor r in csv.DictReader(open('a.csv')):\n"
        f"    try:\n        total += float(r['amount'])\n    {handler}\n"
        "json.dump(total, open('out.json', 'w'))\n"
    )
    llm = ScriptedLLM.by_system({GEN: [code(SUM_AMOUNTS)], REFINE: [fix(skip), fix(skip + "#")]})
    task = make_task(tmp_path)
    assert task.workspace is not None
    (task.workspace / "a.csv").write_text(rows)
    return agent_for(llm, tmp_path, max_rounds=rounds).run(task), llm


def test_the_refiner_is_shown_the_column_of_the_value_that_crashed(tmp_path: Path) -> None:
    crash = SUM_AMOUNTS
    llm = ScriptedLLM.by_system({GEN: [code(crash)], REFINE: [fix(crash.replace("a.csv", "b"))]})
    agent = agent_for(llm, tmp_path, max_rounds=2)
    task = make_task(tmp_path)
    assert task.workspace is not None
    (task.workspace / "a.csv").write_text('id,amount\n1,$860.45\n2,"$4,332.59"\n')
    result = agent.run(task)
    first = result.rounds[0].feedback
    assert first.kind == "runtime_error" and first.input_evidence is not None
    refine_prompt = next(c for c in llm.calls if REFINE in c.system).messages[-1].content
    assert "in the input: values of column 'amount' in a.csv" in refine_prompt
    assert "'$4,332.59'" in refine_prompt


@pytest.mark.parametrize(
    ("handler", "told"),
    [
        ("except ValueError:\n        continue", True),
        ("except (KeyError, ValueError) as exc:\n        print(exc)", True),
        ("except:\n        pass", True),
        ("except ValueError:\n        raise SystemExit('bad amount')", False),  # raises again
        ("except KeyError:\n        continue", False),  # not what crashed
    ],
)
def test_a_repair_that_catches_the_crash_on_the_input_is_told_so(
    tmp_path: Path, handler: str, told: bool
) -> None:
    # The small model's usual repair of a crash on '$860.45': skip the rows it cannot read.
    result, llm = skip_run(tmp_path, handler, 'id,amount\n1,$860.45\n2,"$4,332.59"\n3,7\n', 3)
    second = result.rounds[1].feedback
    assert second.kind in ("check_failed", "runtime_error")
    issue = (
        "this program catches ValueError where an earlier attempt crashed on the input "
        "(ValueError: could not convert string to float: '$860.45')"
    )
    # With the values it crashed on: the verdict's own evidence is about an output key now.
    shown = "The input has values of column 'amount' in a.csv (3 of 3 distinct"
    assert any(i.startswith(issue) and shown in i for i in second.issues) == told
    last_prompt = [c for c in llm.calls if REFINE in c.system][-1].messages[-1].content
    assert (f"issue: {issue}" in last_prompt) == told


@pytest.mark.parametrize(
    ("handler", "skips"),
    [
        # Another format for what the first could not read (dates_01 on the 1.5B).
        ("except ValueError:\n        return datetime.strptime(s, '%Y-%m-%dT%H:%M:%S%z')", False),
        ("except ValueError:\n        v = float(s.replace(',', '.'))", False),
        # Replaced by a constant, or by nothing: the values are lost.
        ("except ValueError:\n        v = float('nan')", True),
        ("except ValueError:\n        return None", True),
        ("except ValueError:\n        print(s)\n        v = 0", True),
        # Calls that are actions, or on a constant or the exception: still a skip.
        ("except ValueError:\n        bad.append(s)\n        v = 0", True),
        ("except ValueError as e:\n        v = float(str(e))", True),
        ("except ValueError:\n        v = float(DEFAULT)", True),
        ("except* ValueError:\n        v = 0", True),
    ],
)
def test_a_handler_that_reads_the_value_another_way_does_not_skip_it(
    handler: str, skips: bool
) -> None:
    source = (
        "from datetime import datetime\ndef parse(s, bad):\n    try:\n"
        "        v = datetime.strptime(s, '%Y-%m-%d') if '-' in s else float(str(s))\n"
        "        bad.append(v)\n"
        f"    {handler}\n    return v\n"
    )
    assert catches({"s.py": source}, "ValueError") == skips


def test_a_handler_of_a_builtin_base_catches_the_crash_too() -> None:
    handler = "try:\n    text = raw.decode()\nexcept {}:\n    text = ''\n"
    assert catches({"s.py": handler.format("ValueError")}, "UnicodeDecodeError")
    assert not catches({"s.py": handler.format("KeyError")}, "UnicodeDecodeError")
    assert not catches({"s.py": handler.format("ValueError"), "n.md": "x"}, "KeyError")


def test_the_profile_shows_what_a_second_look_at_the_data_would(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {
        "sales.csv": "\ufeffregion,amount,units,day\nnorth,$1.50,3,2026-01-02\n"
                     'south,"$1,200",4,2026-01-03\n',
        "stock.csv": "sku;qty\nA-1;7\n",
        "flags.csv": "name,active\nann,yes\nbo,1\n",
        "votes.csv": "name,agree\nann,Yes\nbo,no\ncy,yes\n",
        "plain.csv": "name,score\nann,1.5\nbo,2\n",
        "events.jsonl": '{"a": 1, "b": "x,y"}\n',
        "names.csv": b"name,city\nIn\xe9s,K\xf6ln\n",
    })  # fmt: skip
    lines = input_profile(ws)
    assert lines == [
        "values of column 'active' in flags.csv (2 of 2 distinct, varied formats first): "
        "'yes', '1'",
        "bytes around position 12 of names.csv: b'name,city\\nIn\\xe9s,K\\xf6ln\\n'",
        "the header of sales.csv as Python reads it: ['\\ufeffregion', 'amount', 'units', 'day']",
        "values of column 'amount' in sales.csv (2 of 2 distinct, varied formats first): "
        "'$1.50', '$1,200'; as numbers: '$1.50' is 1.50, '$1,200' is 1200 ('.' marks decimals, "
        "',' groups thousands)",
        "the header of stock.csv as Python reads it: ['sku;qty']",
        # One word in several cases: comparing strings misses all but one.
        "values of column 'agree' in votes.csv (3 of 3 distinct, varied formats first): "
        "'Yes', 'no', 'yes'; yes/no written 3 ways: 'Yes', 'yes' mean yes; 'no' mean no",
    ]
    # Plain names, words, numbers and ISO dates need no second look; JSON lines are not columns.
    (tmp_path / "plain").mkdir()
    assert input_profile(workspace(tmp_path / "plain", {"plain.csv": "a,b\nx,1.5\n"})) == []
    assert input_profile(None) == []


ACTIVE = (
    "values of column 'active' in a.csv (4 of 4 distinct, varied formats first): "
    "'yes', '1', 'TRUE', 'no'; yes/no written 4 ways: 'yes', '1', 'TRUE' mean yes; 'no' mean no"
)
PRICE = (
    "values of column 'price' in a.csv (4 of 4 distinct, varied formats first): "
    "'$2', '$3', '$4', '$5'; as numbers: '$2' is 2"
)


@pytest.mark.parametrize(
    ("verdict", "evidence"),
    [
        # The check quotes no input value: the data's profile, the column it names first.
        ("active: got {v}", f"{ACTIVE}\n{PRICE}"),
        # The check quotes an output key: the loop's check (agent.checks.execute) says the
        # message is a check's verdict, so 'active' is a column's name, not a string to find.
        ("out.json['active']: wrong value, got {v}", ACTIVE),
    ],
)
def test_a_wrong_count_is_shown_with_the_column_behind_it(
    tmp_path: Path, verdict: str, evidence: str
) -> None:
    naive = (
        "import csv, json\n"
        "rows = list(csv.DictReader(open('a.csv')))\n"
        "json.dump(sum(r['active'] == 'yes' for r in rows), open('out.json', 'w'))\n"
    )
    checker = (
        f"import json,sys; v=json.load(open('out.json'))\nsys.exit(f{verdict!r} if v!=3 else 0)"
    )
    llm = ScriptedLLM.by_system({GEN: [code(naive)], REFINE: [fix(naive.replace("a.csv", "b"))]})
    task = make_task(tmp_path, checker=checker)
    assert task.workspace is not None
    (task.workspace / "a.csv").write_text("id,price,active\n1,$2,yes\n2,$3,1\n3,$4,TRUE\n4,$5,no\n")
    first = agent_for(llm, tmp_path, max_rounds=2).run(task).rounds[0].feedback
    assert first.kind == "check_failed"
    assert first.input_evidence == evidence
    refine_prompt = next(c for c in llm.calls if REFINE in c.system).messages[-1].content
    assert f"in the input: {ACTIVE}" in refine_prompt
    assert EVIDENCE_GUIDANCE in refine_prompt


def test_a_short_column_is_listed_whole_and_a_long_one_up_to_a_budget(tmp_path: Path) -> None:
    # Eleven spellings of yes and no: shown all, a program can handle every one of them.
    flags = ["false", "0", "No", "y", "true", "TRUE", "Yes", "1", "Y", "n", "FALSE"]
    notes = [f"note number {i} about something long" for i in range(20)]
    pairs = zip(flags * 2, notes, strict=False)
    rows = ["id,active,note"] + [f"{i},{f},{n}" for i, (f, n) in enumerate(pairs)]
    ws = workspace(tmp_path, {"a.csv": "\n".join(rows) + "\n"})
    active = input_evidence("out.json['active']: wrong value", ws, check_failed=True) or ""
    assert active.startswith("values of column 'active' in a.csv (11 of 11 distinct")
    assert ", ".join(repr(f) for f in flags) + "; yes/no written 11 ways" in active
    # Twenty decimal-comma values: eight show the format; twenty would say nothing more.
    many = "id\tvalue\n" + "".join(f"{i}\t{i},5\n" for i in range(20))
    (tmp_path / "many").mkdir()
    crash = "ValueError: could not convert string to float: '3,5'"
    value = input_evidence(crash, workspace(tmp_path / "many", {"m.csv": many}))
    assert (value or "").startswith("values of column 'value' in m.csv (8 of 20 distinct")
    note = input_evidence(f"out.json['note']: got {notes[3]!r}", ws, check_failed=True) or ""
    listed = note.splitlines()[0].split("varied formats first): ", 1)[1]
    assert 100 < len(listed) <= 200 and note.startswith("values of column 'note' in a.csv (5 of 20")


def test_rows_that_repeat_exactly_are_in_the_profile_and_in_a_wrong_values_evidence(
    tmp_path: Path,
) -> None:
    # A record sent twice makes every count and total too high, and no single value shows it.
    rows = "id,agent,hours\nT-1,kim,1.5\nT-2,lee,2\nT-1,kim,1.5\nT-3,kim,2\nT-3,kim,2\n"
    rows += "T-4,lee,3\nT-5,max,1.5\n"
    ws = workspace(tmp_path, {"t.csv": rows, "e.jsonl": '{"a": 1}\n{"a": 1}\n'})
    repeats = (
        "rows that repeat an earlier row exactly in t.csv: 2 of 7, though column 'id' is "
        "otherwise unique; e.g. ['T-1', 'kim', '1.5'], ['T-3', 'kim', '2']"
    )
    assert input_profile(ws) == [repeats]  # JSON is not rows
    verdict = "out.json['kim']['hours']: wrong value, got 6.5 (too high)"
    agent = "values of column 'agent' in t.csv (3 of 3 distinct, varied formats first): "
    hours = "values of column 'hours' in t.csv (3 of 3 distinct, varied formats first): "
    assert data_evidence(verdict, ws, check_failed=True) == (
        f"{agent}'kim', 'lee', 'max'\n"
        "the 4 of 7 rows of t.csv whose 'agent' is 'kim' hold 'hours': '1.5', '1.5', '2', "
        f"'2'; 'id': 'T-1', 'T-1', 'T-3', 'T-3'\n{hours}'1.5', '2', '3'\n{repeats}"
    )
    assert data_evidence("got 6.5", ws, check_failed=True) == repeats  # only once
    # A crash is about its values, quoted or not: the repeats are not its evidence.
    crash = "ValueError: could not convert string to float: '2'"
    assert repeats not in (data_evidence(crash, ws) or "")
    assert data_evidence("TypeError: unsupported operand type(s)", ws) is None
    # Rows that may well be alike: no column is otherwise unique (a log, a tally); blank rows.
    (tmp_path / "alike").mkdir()
    log = "level,message\nINFO,start\nERROR,timeout\nERROR,timeout\nERROR,timeout\n"
    blank = "id,x\n1,a\n,\n,\n2,b\n"
    alike = input_profile(workspace(tmp_path / "alike", {"app.csv": log, "b.csv": blank}))
    assert not [line for line in alike if line.startswith("rows that repeat")]
    (tmp_path / "unique").mkdir()
    plain = workspace(tmp_path / "unique", {"t.csv": "id,x\n1,a\n2,a\n"})
    assert data_evidence(verdict, plain, check_failed=True) is None


def test_input_symbols_quote_a_value_per_symbol_anywhere_in_the_input(tmp_path: Path) -> None:
    """What the heads and the profile miss: a '$' deep in a JSON-lines file, a cp1252 '€', a
    currency code, a BOM; plain data has none."""
    lines = "".join(f'{{"id": {n}, "amount": "{n}.50"}}\n' for n in range(10))
    files: dict[str, str | bytes] = {
        "events.jsonl": lines + '{"id": 11, "amount": "$860.45"}\n',
        "legacy.csv": "item;cost\nlamp;\x80 414\n".encode("latin-1"),
        "rentals.csv": "unit,rent\nA,USD 1,625\n",
        "stock.csv": "\ufeffsku,qty\nA1,3\n",
    }
    line = input_symbols(workspace(tmp_path, files))
    assert line == (
        "values with data symbols in the input: '$860.45', 'item;cost', 'lamp;€', 'USD 1,625', "
        "'\\ufeffsku'"
    )
    (tmp_path / "plain").mkdir()
    plain = workspace(tmp_path / "plain", {"a.csv": "id,total\n1,12.5\n"})
    assert input_symbols(plain) is None


TRAPS = Path(__file__).resolve().parents[1] / "examples" / "traps"
TASKS = Path(__file__).resolve().parents[1] / "examples" / "tasks"


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("currency_02_expenses", "ValueError: could not convert string to float: '€ 414'"),
        ("missing_01_grades", "ValueError: could not convert string to float: ''"),
        ("dates_03_signups", "ValueError: Invalid isoformat string: 'Feb 04, 2026'"),
        ("bom_01_payroll", "KeyError: 'department'"),
        ("semicolon_01_shipments", "KeyError: 'weight_kg'"),
        ("jsonl_02_requests", "KeyError: 'latency_ms'"),
        ("headers_01_sales", "KeyError: 'amount'"),
        (
            "latin1_01_customers",
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 22: "
            "invalid continuation byte",
        ),
        (
            "bom_03_catalog",
            "json.decoder.JSONDecodeError: Unexpected UTF-8 BOM (decode using utf-8-sig): "
            "line 1 column 1 (char 0)",
        ),
    ],
)
def test_a_trap_crash_is_the_datas(task: str, message: str) -> None:
    # The message as the naive reference solution of each trap family crashes.
    error_type = message.split(":")[0].rsplit(".", 1)[-1]
    assert crashed_on_data(error_type, message, TRAPS / task / "workspace")


@pytest.mark.parametrize(
    ("root", "task", "message"),
    [
        # Counting into a dict never set up: the key is a body value, not the data's fault.
        (TRAPS, "currency_01_invoices", "KeyError: 'Initech'"),
        (TASKS, "orders_report", "KeyError: 'EU'"),
        # A column the header as Python reads it really has.
        (TRAPS, "currency_01_invoices", "KeyError: 'amount'"),
        (TRAPS, "bom_01_payroll", "KeyError: 'salary'"),
        # The header row parsed as data.
        (TRAPS, "currency_01_invoices", "ValueError: could not convert string to float: 'amount'"),
        # Type names and one letter occur inside the input's words.
        (
            TRAPS,
            "currency_01_invoices",
            "TypeError: unsupported operand type(s) for +=: 'float' and 'str'",
        ),
        (TRAPS, "currency_01_invoices", "KeyError: 'I'"),
        (TASKS, "config_merge", "KeyError: 'metrics'"),
        (TRAPS, "currency_01_invoices", "NameError: name 'amount' is not defined"),
    ],
)
def test_a_program_bug_that_quotes_the_input_is_not_the_datas(
    root: Path, task: str, message: str
) -> None:
    error_type = message.split(":")[0]
    assert not crashed_on_data(error_type, message, root / task / "workspace")


BOM_CHECKER = (
    "import json, sys\n"
    "try:\n    value = json.load(open('out.json', encoding='utf-8'))\n"
    "except ValueError as exc:\n    sys.exit(f'out.json is not valid JSON: {exc}')\n"
    "assert value == 42, f'expected 42, got {value}'\n"
)


@pytest.mark.parametrize(
    ("program", "bom", "told"),
    [
        # Python's message says "decode using utf-8-sig": advice for the reader; the program
        # is what put the mark there.
        ("import json\njson.dump(42, open('out.json', 'w', encoding='utf-8-sig'))", True, True),
        ("from pathlib import Path\nPath('out.json').write_text('42', encoding='utf_8_sig')",
         True, True),
        # No mark met, or no line that writes one: nothing to say.
        ("import json\njson.dump(41, open('out.json', 'w', encoding='utf-8'))", False, False),
        ("import json\nopen('out.json', 'w').write('\\ufeff42')", True, False),
    ],
)  # fmt: skip
def test_a_check_that_meets_a_bom_names_the_line_that_wrote_it(
    tmp_path: Path, program: str, bom: bool, told: bool
) -> None:
    llm = ScriptedLLM.by_system({GEN: [code(program)], REFINE: [fix(program + "\n#")]})
    task = make_task(tmp_path, checker=BOM_CHECKER)
    result = agent_for(llm, tmp_path, max_rounds=2).run(task)
    first = result.rounds[0].feedback
    assert first.kind == "check_failed" and not result.passed
    assert ("BOM" in first.summary) == bom
    issue = "solution.py:2 writes with encoding='utf-8-sig', which puts a byte order mark"
    assert any(i.startswith(issue) for i in first.issues) == told
    prompt = [c for c in llm.calls if REFINE in c.system][-1].messages[-1].content
    assert (issue in prompt) == told


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        ("open('r.json', 'w', encoding='utf-8-sig')", True),
        ("open('r.json', mode='a', encoding='UTF_8_SIG')", True),
        ("codecs.open('o.csv', 'w', 'utf-8-sig')", True),
        ("io.open('o.csv', 'x', encoding='utf-8-sig')", True),
        ("Path('o.json').open('w', encoding='utf-8-sig')", True),
        ("Path('o.json').write_text(t, encoding='utf-8-sig')", True),
        ("open('in.csv', encoding='utf-8-sig')", False),  # reading: what it is for
        ("open('in.csv', 'r', encoding='utf-8-sig')", False),
        ("open('a', encoding='utf-8-sig')", False),  # a file named like a mode
        ("Path('in.csv').open(encoding='utf-8-sig')", False),
        ("Path('in.csv').read_text(encoding='utf-8-sig')", False),
        ("open('o.json', 'w', encoding='utf-8')", False),
    ],
)
def test_bom_writes_finds_writes_with_utf_8_sig_only(line: str, writes: bool) -> None:
    source = f"import codecs, io\nfrom pathlib import Path\nt = ''\n{line}\n"
    assert bom_writes({"s.py": source, "notes.md": line}) == (["s.py:4"] if writes else [])


@pytest.mark.parametrize(
    ("first", "repair", "told"),
    [
        # The 1.5B's repair of a missing pandas: the import under try, a message, exit 1. The
        # check's verdict then says nothing of the import.
        ("import pandas", "import sys\ntry:\n    import pandas.io\nexcept ImportError:\n"
         "    sys.exit('pandas is not installed')\n", True),
        ("import pandas", "def unused():\n    from pandas import read_csv\nimport json\n"
         "json.dump(41, open('out.json', 'w'))\n", True),
        ("import pandas", "import json\njson.dump(41, open('out.json', 'w'))\n", False),
        # A module missing from a package that is there (xml.etree.cElementTree, gone in
        # later Pythons): the package is still there.
        ("import json.nosuchmod", "import json.decoder\nimport json\n"
         "json.dump(41, open('out.json', 'w'))\n", False),
        ("import json.nosuchmod", "from json import nosuchmod\n", True),
    ],
)  # fmt: skip
def test_a_later_candidate_that_still_imports_a_missing_module_is_told_again(
    tmp_path: Path, first: str, repair: str, told: bool
) -> None:
    module = first.split()[-1]
    program = f"{first}\nimport json\njson.dump(42, open('out.json', 'w'))\n"
    llm = ScriptedLLM.by_system({GEN: [code(program)], REFINE: [fix(repair), fix(repair + "#")]})
    result = agent_for(llm, tmp_path, max_rounds=3).run(make_task(tmp_path))
    issue = f"'{module}' cannot be imported where the program runs, and nothing can be installed"
    assert any(i.startswith(issue) for i in result.rounds[0].feedback.issues)
    second = result.rounds[1].feedback
    assert not second.passed
    assert sum(i.startswith(issue) for i in second.issues) == told
    last_prompt = [c for c in llm.calls if REFINE in c.system][-1].messages[-1].content
    assert (issue in last_prompt) == told


def test_imported_names_every_module_wherever_it_is_imported() -> None:
    source = (
        "import os.path, json as j\nfrom collections import abc\nfrom . import sibling\n"
        "def f():\n    try:\n        import pandas\n    except ImportError:\n        pass\n"
    )
    assert imported({"s.py": source, "broken.py": "import numpy(", "n.md": "import x"}) == {
        "os.path", "json", "collections", "collections.abc", "pandas"
    }  # fmt: skip
    files = {
        "solution.py": "",
        "helpers.py": "",
        "pkg/__init__.py": "",
        "pkg/io.py": "",
        "a.md": "",
    }
    assert own_modules(files) == {"solution", "helpers", "pkg", "pkg.io"}


@pytest.mark.parametrize(
    ("values", "reading"),
    [
        # Yes/no answers: the 1.5B's repairs of booleans_01 compared one more spelling each
        # round.
        (["true", "Yes", "y", "1", "false", "No", "0"],
         "yes/no written 7 ways: 'true', 'Yes', 'y', '1' mean yes; 'false', 'No', '0' mean no"),
        (["Y", "n", " N "], "yes/no written 3 ways: 'Y' mean yes; 'n', ' N ' mean no"),
        (["true", "false"], None),  # two ways: nothing to sort out
        (["yes", "no", "maybe"], None),  # not all yes/no
        (["1", "0", "2"], None),
        (["yes", "y", "YES"], None),  # no "no" at all
        # Numbers float() cannot read.
        (["$860.45", '"$4,332.59"', "-$120"],
         "as numbers: '$860.45' is 860.45, '$4,332.59' is 4332.59, '-$120' is -120 "
         "('.' marks decimals, ',' groups thousands)"),
        (['"1.010,9"', '"742,2"'],
         "as numbers: '1.010,9' is 1010.9, '742,2' is 742.2 "
         "(',' marks decimals, '.' groups thousands)"),
        (['"GBP 4,294"', "£765", '"3,725.50 USD"'],
         "as numbers: 'GBP 4,294' is 4294, '£765' is 765, '3,725.50 USD' is 3725.50 "
         "('.' marks decimals, ',' groups thousands)"),
        (['"18,9"', '"-2,7"'], "as numbers: '18,9' is 18.9, '-2,7' is -2.7 (',' marks decimals)"),
        (['"18,9"', ""], "as numbers: '18,9' is 18.9 (',' marks decimals)"),  # a blank cell
        # In doubt, or nothing float() cannot read: no reading.
        (['"4,294"', "12"], None),  # 4294 or 4.294?
        (['"1,5"', '"1,234.5"'], None),  # two decimal marks
        (["12.5", "7"], None),
        (["N/A", "$4"], None),  # not all numbers
        (["ACC-2", "ACC-1", "ACC 3"], None),  # an id, not a currency code
        (["72.5%", "35%"], None),  # a percent is the task's to read
        (['"12,5"', "01.02.2024"], None),  # a date beside a decimal comma
        (['"7,5"', "1.2.3"], None),  # a version
        (["$1.50", '"1,2,3"'], None),  # groups of three or none
        (["0", "1", " 1"], None),  # a count as often as an answer
        ([" " * 3000 + "x", "$4"], None),  # matched in linear time
        # Every value judges the decimal mark, whichever comes first.
        (['"1,234"', '"12,5"'], "as numbers: '1,234' is 1.234 (',' marks decimals)"),
        (['"12,5"', '"1,234"'], "as numbers: '12,5' is 12.5 (',' marks decimals)"),
    ],
)  # fmt: skip
def test_a_column_is_read_where_its_values_leave_no_doubt(
    tmp_path: Path, values: list[str], reading: str | None
) -> None:
    rows = ["id,plan,active"] + [f"{i},pro,{v}" for i, v in enumerate(values * 3)]
    ws = workspace(tmp_path, {"s.csv": "\n".join(rows) + "\n"})
    text = data_evidence("result.json['pro']['active']: wrong value, got 1", ws, check_failed=True)
    assert text is not None and "values of column 'active' in s.csv" in text
    if reading:
        assert text.endswith(f"; {reading}")
    else:
        assert "mean yes" not in text and "as numbers" not in text


def test_two_literals_of_one_column_show_it_once(tmp_path: Path) -> None:
    # A row the program printed: 'meter' names the column, 'M-300' is one of its cells.
    ws = workspace(tmp_path, {"m.csv": "meter,kwh\nM-100,3\nM-300,4\n"})
    text = input_evidence("Skipping row: {'meter': 'M-300'}", ws, check_failed=True)
    assert text == (
        "values of column 'meter' in m.csv (2 of 2 distinct, varied formats first): "
        "'M-100', 'M-300'"
    )


def test_a_wrong_figure_of_a_group_shows_the_groups_rows(tmp_path: Path) -> None:
    # decimal_comma_01 on the 1.5B: past the trap, its average divided by the wrong count;
    # the verdict quoted 'T-04' and 'avg' and the evidence listed only the sensor names.
    rows = "sensor,recorded,temperature_c,note\n" + "".join(
        f'{s},2026-01-0{i},"{t}",n{i}\n'
        for i, (s, t) in enumerate([("T-01", "1,5"), ("T-04", "18,9"), ("T-04", "-2,7"),
                                    ("T-01", "3,0"), ("T-04", "19,5")], start=1)
    )  # fmt: skip
    ws = workspace(tmp_path, {"r.csv": rows})
    text = input_evidence(
        "result.json['T-04']['avg']: wrong value, got 40.83 (too high)", ws, check_failed=True
    )
    assert text is not None
    assert text.splitlines()[1] == (
        "the 3 of 5 rows of r.csv whose 'sensor' is 'T-04' hold 'recorded': '2026-01-02', "
        "'2026-01-03', '2026-01-05'; 'temperature_c': '18,9', '-2,7', '19,5'; "
        "'note': 'n2', 'n3', 'n5'"
    )
    # A crash quoting a group's name is not about the output: no group line.
    assert "rows of r.csv whose" not in (input_evidence("KeyError: 'T-04'", ws) or "")


@pytest.mark.parametrize(
    ("rows", "message", "shown"),
    [
        # DictReader's default comma reads 'shipment_id;carrier;...' as one column; the lines
        # holding 'carrier' do not say so, the header as read does.
        ("shipment_id;carrier;weight_kg\nS1;DHL;2,5\n", "KeyError: 'carrier'",
         "the header of s.csv as Python reads it: ['shipment_id;carrier;weight_kg']"),
        # A header cell converted is still the header read as data, whatever the delimiter.
        ("id;qty\nA;3\nB;4\n", "ValueError: invalid literal for int() with base 10: 'qty'",
         "'qty' is a column name, in the header row of s.csv: ['id', 'qty']"),
    ],
)  # fmt: skip
def test_a_semicolon_file_s_header_as_a_lookup_and_as_data(
    tmp_path: Path, rows: str, message: str, shown: str
) -> None:
    assert input_evidence(message, workspace(tmp_path, {"s.csv": rows})) == shown


def test_a_group_line_is_for_keys_only_and_stays_short_on_long_or_missing_cells(
    tmp_path: Path,
) -> None:
    long = "x" * 3000
    rows = f"plan,active,note\npro,yes,{long}\npro,yes\nfree,no,n\n"
    ws = workspace(tmp_path, {"s.csv": rows})
    # A value the check got ('yes') is no group of the output.
    got = input_evidence("result.json['n']: got 'yes'", ws, check_failed=True) or ""
    assert "rows of s.csv whose 'active'" not in got
    text = input_evidence("result.json['pro']: wrong value", ws, check_failed=True) or ""
    group = next(line for line in text.splitlines() if line.startswith("the 2 of 3 rows"))
    assert len(group) < 300
    assert "'note': '" + "x" * 57 + "...', ''" in group  # the short row's cell is ''


def test_a_missing_value_anywhere_in_a_table_is_quoted_for_the_data_gate(tmp_path: Path) -> None:
    rows = "id,price\n" + "".join(f"{i},{i}.5\n" for i in range(50)) + "51,N/A\n52\n"
    ws = workspace(tmp_path, {"p.csv": rows, "n.txt": "a - b\n"})
    assert input_symbols(ws) == "a missing value in the input: 'N/A'"
    (tmp_path / "plain").mkdir()
    plain = workspace(tmp_path / "plain", {"p.csv": "id,price\n1,$2\n"})
    assert input_symbols(plain) == "values with data symbols in the input: '$2'"


def test_a_name_the_program_wrote_that_no_cell_holds_shows_the_closest_cell(
    tmp_path: Path,
) -> None:
    # latin1_02 on the 1.5B read menu.csv with errors='ignore' and wrote "Rsti" for "Rösti"
    # in two rounds; the evidence listed only the categories.
    menu = "dish,category,price\nRösti,Main,28.70\nCafé au lait,Drinks,5.80\n"
    ws = workspace(tmp_path, {"menu.csv": menu.encode("cp1252")})
    text = input_evidence("result.json['Main']['priciest']: wrong value, got \"Rsti\"", ws,
                          check_failed=True)  # fmt: skip
    assert text is not None and text.splitlines()[0] == (
        "the program wrote 'Rsti', which no input cell holds; the closest is 'Rösti', in "
        "column 'dish' of menu.csv (not UTF-8: read as cp1252)"
    )
    # A value a cell holds, a computed number or a word unlike any cell: nothing.
    for got in ("Rösti", "12.5", "expensive"):
        verdict = f"result.json['Main']['priciest']: wrong value, got {got!r}"
        assert "which no input cell holds" not in (
            input_evidence(verdict, ws, check_failed=True) or ""
        )


def test_skipping_a_missing_value_is_not_told_it_loses_data(tmp_path: Path) -> None:
    # missing_01 passed by skipping blank scores; jsonl_03 was told its skip of records
    # without 'humidity' made the result wrong. A crash on a missing value gets no such issue.
    handler = "except ValueError:\n        continue"
    result, _ = skip_run(tmp_path, handler, "id,amount\n1,\n2,5\n3,N/A\n", 2)
    assert result.rounds[0].feedback.key_message == (
        "ValueError: could not convert string to float: ''"
    )
    assert not [i for i in result.rounds[1].feedback.issues if "catches ValueError" in i]
    (tmp_path / "j").mkdir()
    ws = workspace(tmp_path / "j", {"t.jsonl": '{"id": 1, "h": 2}\n{"id": 2}\n'})
    assert crashed_on_missing("KeyError", "KeyError: 'h'", ws)
    assert not crashed_on_missing("KeyError", "KeyError: 'id'", ws)  # every record has it
    # Under another spelling in some records the key is renamed, not missing.
    (tmp_path / "k").mkdir()
    renamed = workspace(tmp_path / "k", {"t.jsonl": '{"h": 2}\n{"H": 3}\n'})
    assert not crashed_on_missing("KeyError", "KeyError: 'h'", renamed)
    (tmp_path / "c").mkdir()
    table = workspace(tmp_path / "c", {"a.csv": "d,n\n2026-01-02,N/A\n,4\n", "x.txt": "\n"})
    assert crashed_on_missing("ValueError", "invalid literal for int() with base 10: 'N/A'", table)
    assert crashed_on_missing("ValueError", "time data '' does not match format '%Y-%m-%d'", table)
    assert not crashed_on_missing("ValueError", "could not convert string to float: '$5'", table)
    # A '' the program made itself (no blank cell in a column with values): not missing.
    (tmp_path / "m").mkdir()
    made = workspace(tmp_path / "m", {"a.csv": "id,amount\n1,$12.50\n", "n.txt": "a\n\nb\n"})
    assert not crashed_on_missing("ValueError", "could not convert string to float: ''", made)


def test_a_value_a_cell_holds_with_spaces_or_in_another_case_is_not_stray(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"r.csv": "id, region\n1, north\n2, South\n"})
    for got in ("north", "south"):
        verdict = f"result.json['n']: wrong value, got {got!r}"
        assert "no input cell holds" not in (input_evidence(verdict, ws, check_failed=True) or "")


def test_a_verdict_on_the_keys_inside_a_group_shows_only_what_the_input_says_of_them(
    tmp_path: Path,
) -> None:
    """decimal_comma_02 on the 1.5B: every value right and an extra key 'sum' under each
    analyte. The evidence listed the sodium rows' decimal commas (the path's group) and the
    refiner went back to the commas, twice, leaving 'sum' in place."""
    rows = "sample_id\tanalyte\tvalue\nS1\tsodium\t135,30\nS2\tglucose\t4,1\nS2\tglucose\t4,1\n"
    rows += "S3\tsodium\t141,14\nS4\tsodium\t141,14\nS5\tglucose\t4,1\nS5\tglucose\t4,1\n"
    ws = workspace(tmp_path, {"lab.tsv": rows})
    assert any(line.startswith("rows that repeat") for line in input_profile(ws))
    extra = "result.json['sodium']: unexpected key 'sum'"
    assert input_evidence(extra, ws, check_failed=True) is None
    assert data_evidence(extra, ws, check_failed=True) is None  # no profile, no repeats
    nested = "result.json['glucose']: missing key 'value'"
    assert data_evidence(nested, ws, check_failed=True) == (
        "values of column 'value' in lab.tsv (3 of 3 distinct, varied formats first): "
        "'135,30', '4,1', '141,14'; as numbers: '135,30' is 135.30 (',' marks decimals)"
    )
    # The same path over a wrong value: the group's rows, as before.
    wrong = "result.json['sodium']['avg']: wrong value, got 1.3 (too low)"
    assert "rows of lab.tsv whose 'analyte' is 'sodium'" in (
        data_evidence(wrong, ws, check_failed=True) or ""
    )
    # A key missing at the top is often a group misread: all of it, repeated rows included.
    top = data_evidence("result.json: missing key 'sodium'", ws, check_failed=True) or ""
    assert top.startswith("values of column 'analyte' in lab.tsv") and "rows that repeat" in top


@pytest.mark.parametrize(
    ("message", "keys"),
    [
        ("result.json['a']: unexpected key 'sum'", ["sum"]),
        ("result.json: missing keys: 'avg', 'sum'", ["avg", "sum"]),
        ('out.json: unexpected keys "a", "b" and "c"', ["a", "b", "c"]),
        ("result.json: extra key 'x'; missing key 'y'", ["x", "y"]),
        # "key" in another sense: no verdict on the output's keys.
        ("result.json: total of key 'C-01' is wrong, got 812.4 (too high)", []),
        ("result.json: not sorted by key 'date'", []),
        ("result.json['rows'][0]: wrong value, got \"primary key 'id'\"", []),
        ("KeyError: 'sum'", []),
    ],
)
def test_the_keys_a_verdict_on_the_output_s_shape_names(message: str, keys: list[str]) -> None:
    assert named_keys(message) == keys
