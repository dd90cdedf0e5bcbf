"""`lessonloop run` end to end: real task dir, real sandbox, real SQLite + chromadb store,
a scripted model (the shipped double, selected with --model scripted:FILE)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CRASH, GEN, GOOD, REFINE, code, fix

LESSON = "You write one lesson"
ANALYSIS = json.dumps(
    {
        "root_cause": "the CSV starts with a UTF-8 byte order mark, so the first header "
        "is '\\ufeffamount', not 'amount'",
        "fix": "open CSV files with encoding='utf-8-sig'",
        "applies_when": "reading CSV files exported by Excel or Windows tools",
    }
)
BOM_CRASH = "import csv, json\nrows = list(csv.DictReader(open('orders.csv')))\n" + (
    "json.dump(sum(float(r['amount']) for r in rows), open('total.json', 'w'))"
)
BOM_GOOD = BOM_CRASH.replace("open('orders.csv')", "open('orders.csv', encoding='utf-8-sig')")


def make_bom_task(root: Path) -> Path:
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "orders.csv").write_text("\ufeffamount,region\n10.5,EU\n2,US\n")
    (root / "check.py").write_text(
        "import json, sys\nv = json.load(open('total.json'))\n"
        "sys.exit(0 if abs(v - 12.5) < 1e-9 else f'total.json holds {v}, which is wrong')\n"
    )
    (root / "task.toml").write_text(
        'goal = "Read orders.csv and write the sum of its amount column to total.json"\n'
        'output = ["solution.py"]\n'
        'check = "python solution.py && python \\"$TASK_DIR/check.py\\""\ntimeout_s = 20\n'
        'scope = "cli-test"\n'
    )
    return root


def make_task_dir(root: Path) -> Path:
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "input.txt").write_text("6 7\n")
    (root / "check.py").write_text(
        "import json, sys\nv = json.load(open('out.json'))\n"
        "sys.exit(0 if v == 42 else f'got {v}')\n"
    )
    (root / "task.toml").write_text(
        'goal = "Write the number 42 as JSON to out.json"\noutput = ["solution.py"]\n'
        'check = "python solution.py && python \\"$TASK_DIR/check.py\\""\ntimeout_s = 20\n'
        'scope = "cli-test"\n'
    )
    return root


def lessonloop(tmp_path: Path, replies: object, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / f"replies-{len(list(tmp_path.glob('replies-*')))}.json"
    script.write_text(json.dumps(replies))
    # One candidate per round: the scripted replies are written round by round.
    env = {
        **os.environ,
        "LESSONLOOP_HOME": str(tmp_path / "home"),
        "LESSONLOOP_POOL_SIZE": "1",
        "LESSONLOOP_FIRST_POOL": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "agent", "run", *args, "--model", f"scripted:{script}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`lessonloop run ARGS` with exactly `env` (the model is in ARGS)."""
    return subprocess.run(
        [sys.executable, "-m", "agent", "run", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_run_json_without_memory(tmp_path: Path) -> None:
    task = make_task_dir(tmp_path / "task")
    proc = lessonloop(
        tmp_path, {GEN: [code(CRASH)], REFINE: [fix(GOOD)]}, str(task), "--no-memory", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["passed"] is True and data["rounds"] == 2
    assert data["feedback_kinds"] == ["runtime_error", "success"]
    assert data["usage"]["total_tokens"] > 0 and data["usage"]["calls"] == 2
    assert "round  1  generated" in proc.stderr  # live progress goes to stderr
    run_dir = Path(data["run_dir"])
    assert (run_dir / "best" / "solution.py").read_text() == GOOD + "\n"
    assert (run_dir / "trajectory.json").is_file()


def test_the_table_says_when_a_round_went_back_to_an_earlier_one(tmp_path: Path) -> None:
    task = make_task_dir(tmp_path / "task")
    (task / "check.py").write_text(
        "import json, sys\nv = json.load(open('out.json'))\n"
        "print(f'LESSONLOOP_SCORE {v}/42')\nsys.exit(0 if v == 42 else f'got {v}')\n"
    )
    close = GOOD.replace("42", "30")
    # Round 2 crashes (worse than round 1's 30 of 42): round 3 repairs round 1 and passes.
    proc = lessonloop(
        tmp_path,
        {GEN: [code(close)], REFINE: [fix(CRASH), fix(GOOD)]},
        str(task),
        "--no-memory",
        "--max-rounds",
        "3",
    )
    assert proc.returncode == 0, proc.stderr
    # The table (its cells wrap on a narrow terminal): round 3's action says where it went.
    assert proc.stdout.count("refine of") == 1 and "round 1" in proc.stdout


def test_failed_run_exits_non_zero_with_unresolved_issues(tmp_path: Path) -> None:
    task = make_task_dir(tmp_path / "task")
    wrong = GOOD.replace("42", "41")
    proc = lessonloop(
        tmp_path,
        {GEN: [code(wrong)], REFINE: [fix(wrong.replace("41", "40"))]},
        str(task),
        "--no-memory",
        "--max-rounds",
        "2",
    )
    assert proc.returncode == 1, proc.stderr
    assert "FAILED" in proc.stdout and "unresolved" in proc.stdout
    assert "stop: max_rounds (out of rounds (--max-rounds))" in " ".join(proc.stdout.split())
    assert "no lesson stored" not in proc.stdout  # --no-memory: nothing to say about lessons
    # With memory, the run says why it learned nothing (a newcomer cannot tell otherwise).
    again = lessonloop(
        tmp_path,
        {GEN: [code(wrong)], REFINE: [fix(wrong.replace("41", "40"))]},
        str(task),
        "--memory",
        str(tmp_path / "store"),
        "--max-rounds",
        "2",
    )
    assert again.returncode == 1, again.stderr
    said = " ".join(again.stdout.split())
    assert "no lesson stored: the task was not solved, so no fix was verified" in said


def test_bad_task_dir_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = lessonloop(tmp_path, [], str(tmp_path / "empty"), "--no-memory")
    assert proc.returncode == 2 and "no task.toml" in proc.stderr


def test_lesson_learned_in_one_run_is_recalled_in_the_next(tmp_path: Path) -> None:
    task = make_bom_task(tmp_path / "bom_task")
    store = str(tmp_path / "store")
    first = lessonloop(
        tmp_path,
        {GEN: [code(BOM_CRASH)], REFINE: [fix(BOM_GOOD, "utf-8-sig")], LESSON: [ANALYSIS]},
        str(task),
        "--memory",
        store,
        "--json",
    )
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["feedback_kinds"] == ["runtime_error", "success"]
    written = data["lessons_written"]
    assert [w["action"] for w in written] == ["created"]
    # What the rounds cost travels with the run, and is not stored as a lesson of its own.
    process = data["process"]
    assert process["rounds"] == 2 and process["costliest"].startswith("runtime_error/KeyError")
    assert "utf-8-sig" in process["first_next_time"]

    # The same trap again: the lesson is handed to the generator, which gets it right.
    second = lessonloop(tmp_path, {GEN: [code(BOM_GOOD)]}, str(task), "--memory", store, "--json")
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert data["recalled_lesson_ids"] == [written[0]["id"]]
    assert data["rounds"] == 1 and data["lessons_written"] == [] and data["process"] is None

    # ...and its use is on record: the lesson helped a passing run.
    env = {**os.environ, "LESSONLOOP_HOME": str(tmp_path / "home")}
    show = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "lessons",
            "--memory",
            store,
            "show",
            written[0]["id"],
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert show.returncode == 0, show.stderr
    assert '"helped": 1' in show.stdout


def test_a_run_that_ends_by_an_error_is_recorded_so_and_counts_no_lesson(tmp_path: Path) -> None:
    """The model's server is gone mid-life: `run` exits 2, and the store says why the run
    ended, instead of showing it as running forever with its recalled lesson's use pending."""
    from memory import Memory, MiniLMEmbedder

    task = make_bom_task(tmp_path / "bom_task")
    store = tmp_path / "store"
    first = lessonloop(
        tmp_path,
        {GEN: [code(BOM_CRASH)], REFINE: [fix(BOM_GOOD, "utf-8-sig")], LESSON: [ANALYSIS]},
        str(task),
        *("--memory", str(store), "--json"),
    )
    assert first.returncode == 0, first.stderr
    (lesson_id,) = [w["id"] for w in json.loads(first.stdout)["lessons_written"]]
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "LESSONLOOP_HOME": str(tmp_path / "home"),
        "LESSONLOOP_OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "LESSONLOOP_OPENAI_MAX_RETRIES": "0",
    }
    args = [str(task), "--memory", str(store), "--model", "openai:gone"]
    proc = run_cli(args, env)
    assert proc.returncode == 2 and "cannot reach the server" in proc.stderr, proc.stderr
    with Memory.open(str(store), embedder=MiniLMEmbedder()) as memory:
        runs = memory.list_runs().items
        crashed = [r for r in runs if r.passed is None]
        assert len(runs) == 2 and len(crashed) == 1
        assert "cannot reach the server" in crashed[0].error
        assert crashed[0].recalled_lesson_ids == (lesson_id,)
        assert [u.outcome for u in memory.uses(lesson_id)] == ["aborted"]
        assert memory.get(lesson_id).misled == 0


def test_a_teacher_model_writes_the_lesson(tmp_path: Path) -> None:
    """--retro-model: the worker only generates and refines; the teacher writes the lesson."""
    task = make_bom_task(tmp_path / "bom_task")
    teacher = tmp_path / "teacher.json"
    teacher.write_text(json.dumps({LESSON: [ANALYSIS]}))
    proc = lessonloop(
        tmp_path,
        {GEN: [code(BOM_CRASH)], REFINE: [fix(BOM_GOOD, "utf-8-sig")]},  # no LESSON replies
        str(task),
        "--memory",
        str(tmp_path / "store"),
        "--retro-model",
        f"scripted:{teacher}",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [w["action"] for w in data["lessons_written"]] == ["created"]
    assert data["retrospective_fallbacks"] == []  # the teacher answered
    # The teacher's call is reported apart from the worker's (two replies, two calls).
    assert data["retrospective_usage"]["calls"] == 1 and data["usage"]["calls"] == 2


def test_a_bad_memory_location_is_a_clear_error(tmp_path: Path) -> None:
    task = make_task_dir(tmp_path / "task")
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    for store in ("postgresql://u:p@127.0.0.1:1/x", str(blocked / "memory")):
        proc = lessonloop(tmp_path, [], str(task), "--memory", store)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("chroma_down", "cannot reach Chroma server"),
        ("corrupt_toml", "invalid TOML"),
        ("escaping_output", "must be a relative path inside the workspace"),
        ("unknown_model", "unknown model 'foo:bar'"),
        ("missing_api_key", "needs an API key"),
    ],
)
def test_each_misconfiguration_is_one_clear_error_line(
    tmp_path: Path, case: str, expected: str
) -> None:
    task = make_task_dir(tmp_path / "task")
    env = {**os.environ, "LESSONLOOP_HOME": str(tmp_path / "home")}
    env.pop("OPENAI_API_KEY", None)
    env.pop("LESSONLOOP_OPENAI_API_KEY", None)
    replies = tmp_path / "replies.json"
    replies.write_text("[]")
    args = [str(task), "--model", f"scripted:{replies}", "--no-memory"]
    if case == "chroma_down":
        env["LESSONLOOP_CHROMA_URL"] = "http://127.0.0.1:9"
        args.remove("--no-memory")
    elif case == "corrupt_toml":
        (task / "task.toml").write_text("goal = \n")
    elif case == "escaping_output":
        text = (task / "task.toml").read_text()
        (task / "task.toml").write_text(text.replace('"solution.py"', '"../escape.py"', 1))
    elif case == "unknown_model":
        args[2] = "foo:bar"
    else:
        args[2] = "openai:gpt-4o-mini"
    proc = run_cli(args, env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("error: ") and expected in proc.stderr
    assert "Traceback" not in proc.stderr
