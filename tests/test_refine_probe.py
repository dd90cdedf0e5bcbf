"""scripts/refine_probe.py: a recorded repair asked again, each answer checked in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.llm.scripted import ScriptedLLM
from agent.task import load_task
from scripts.refine_probe import main
from tests.helpers import GEN, REFINE, code, fix, write_task_dir
from tests.test_loop import agent_for

# Reads a.csv, writes {'a': {'n': 2, 'sum': 3}}; the check wants {'a': {'n': 2}}.
EXTRA = (
    "import csv, json\n"
    "rows = list(csv.DictReader(open('a.csv')))\n"
    "json.dump({'a': {'n': len(rows), 'sum': 3}}, open('out.json', 'w'))\n"
)
RIGHT = EXTRA.replace(", 'sum': 3", "")
CHECKER = (
    "import json, sys\n"
    "v = json.load(open('out.json'))\n"
    "print('LESSONLOOP_SCORE 1/1' if v['a'].get('n') == 2 else 'LESSONLOOP_SCORE 0/1')\n"
    "sys.exit(\"out.json['a']: unexpected key 'sum'\" if 'sum' in v['a'] else 0)\n"
)


def trap_dir(root: Path) -> Path:
    return write_task_dir(
        root / "tasks" / "extra_key",
        inputs={"a.csv": "id,a\n1,a\n2,a\n"},
        checker=CHECKER,
        toml='goal = "Count the rows of a.csv into out.json: {\\"a\\": {\\"n\\": 2}}"\n'
        'output = ["solution.py"]\nrun = "python solution.py"\n'
        'check = "python \\"$TASK_DIR/check.py\\""\ntimeout_s = 20\n',
    )


def test_a_recorded_repair_is_asked_again_and_each_answer_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = load_task(trap_dir(tmp_path))
    loop_llm = ScriptedLLM.by_system(
        {GEN: [code(EXTRA)] * 2, REFINE: [fix(EXTRA, "sum it")] * 2}  # all repeat round 1
    )
    result = agent_for(loop_llm, tmp_path, max_rounds=3).run(task)
    assert [r.feedback.credit for r in result.rounds] == [1.0]  # round 2 repeated round 1
    assert not result.passed
    record = tmp_path / "run.json"
    # A round-2 repair of round 1, as the stream kept it (a repeat is not a round of its own).
    second = result.rounds[0].model_copy(update={"round": 2, "action": "refine", "repairs": 1})
    record.write_text(
        result.model_copy(update={"rounds": (result.rounds[0], second)}).model_dump_json()
    )
    replies = tmp_path / "replies.json"
    # The right answer forgets `import json`: the loop's repair step adds it, so does the probe.
    forgot = RIGHT.replace("import csv, json", "import csv")
    replies.write_text(json.dumps([fix(EXTRA, "keep it"), fix(forgot, "drop the key 'sum'")]))
    out = tmp_path / "probe.jsonl"
    argv = [str(record), "--round", "2", "--k", "1", "--tasks", str(tmp_path / "tasks")]
    assert main([*argv, "--model", f"scripted:{replies}", "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    # Checked again by today's code: the verdict, and what the program wrote beside it.
    assert "message: out.json['a']: unexpected key 'sum'" in shown
    assert "the program wrote: out.json" in shown
    draws = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(d["draw"], d["temperature"], d["kind"]) for d in draws] == [
        (0, 0.0, "check_failed"),
        (1, 0.8, "success"),
    ]
    assert draws[1]["fix_note"] == "drop the key 'sum'" and draws[0]["credit"] == 1.0


def test_a_round_that_repaired_nothing_is_refused(tmp_path: Path) -> None:
    task = load_task(trap_dir(tmp_path))
    result = agent_for(ScriptedLLM.by_system({GEN: [code(RIGHT)]}), tmp_path).run(task)
    record = tmp_path / "run.json"
    record.write_text(result.model_dump_json())
    with pytest.raises(SystemExit, match="round 1 of .* is no recorded repair"):
        main([str(record), "--round", "1", "--tasks", str(tmp_path / "tasks")])
