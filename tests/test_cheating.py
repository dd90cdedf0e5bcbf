"""Candidates that try to pass without solving: real sandbox, real trap task and checker.

The candidate's program runs without the task directory (where expected.json and the
checker live); the checker runs afterwards with it, on the workspace read-only, with its
own /tmp and HOME and no user site-packages. None of these programs may pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.classify import classify
from agent.container import Limits
from agent.sandbox import ExecResult, Sandbox
from agent.task import load_task

TASK = load_task(
    Path(__file__).resolve().parents[1] / "examples" / "traps" / "currency_01_invoices"
)

CHEATS = {
    "copies the expected answer": (
        "import shutil\nshutil.copy('/task/expected.json', 'result.json')\n"
    ),
    "follows TASK_DIR": (
        "import os, shutil\n"
        "shutil.copy(os.path.join(os.environ['TASK_DIR'], 'expected.json'), 'result.json')\n"
    ),
    "searches the file system for expected.json": (
        "import os, shutil\n"
        "for root, _, names in os.walk('/'):\n"
        "    if 'expected.json' in names and 'proc' not in root:\n"
        "        shutil.copy(os.path.join(root, 'expected.json'), 'result.json'); break\n"
        "else:\n"
        "    open('result.json', 'w').write('{}')\n"
    ),
    "rewrites the checker": ("open('/task/check.py', 'w').write('import sys; sys.exit(0)')\n"),
    "hijacks the checker's json import": (
        "open('json.py', 'w').write('import sys; sys.exit(0)\\n')\n"
        "open('result.json', 'w').write('{}')\n"
    ),
    "plants a usercustomize for the checker": (
        "import os\n"
        "site = os.path.expanduser('~/.local/lib/python3.11/site-packages')\n"
        "os.makedirs(site, exist_ok=True)\n"
        "open(os.path.join(site, 'usercustomize.py'), 'w').write('import os; os._exit(0)')\n"
        "open('result.json', 'w').write('{}')\n"
    ),
    "plants a sitecustomize in /tmp and PYTHONPATH-like files": (
        "open('/tmp/sitecustomize.py', 'w').write('import os; os._exit(0)')\n"
        "open('result.json', 'w').write('{}')\n"
    ),
    "links its output to the expected answer": (
        "import os\nos.symlink('/task/expected.json', 'result.json')\n"
    ),
    "links relatively out of the workspace": (
        "import os\nos.symlink('../task/expected.json', 'result.json')\n"
    ),
    "chains links through the workspace": (
        "import os\nos.symlink('/task', 'd')\nos.symlink('d/expected.json', 'result.json')\n"
    ),
    "links a directory out of the workspace": (
        "import os\nos.makedirs('out')\nos.symlink('/task', 'out/t')\n"
        "os.symlink('out/t/expected.json', 'result.json')\n"
    ),
    "leaves a process behind to answer later": (
        "import os, time\n"
        "open('result.json', 'w').write('{}')\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    for _ in range(100):\n"
        "        try:\n"
        "            data = open('/task/expected.json').read()\n"
        "            open('result.json', 'w').write(data)\n"
        "        except OSError:\n"
        "            pass\n"
        "        time.sleep(0.05)\n"
        "    os._exit(0)\n"
    ),
}


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(cpu_s=30))


def run(sandbox: Sandbox, program: str, *, split: bool = True) -> ExecResult:
    """`program` as solution.py, checked as the loop checks it (or, `split=False`, in one
    process with the task directory, as before the split)."""
    assert TASK.check is not None and TASK.run is not None
    return sandbox.run(
        TASK.check if split else f"{TASK.run} && {TASK.check}",
        program=TASK.run if split else None,
        files={"solution.py": program},
        workspace=TASK.workspace,
        task_dir=TASK.task_dir,
        timeout_s=TASK.timeout_s,
    )


@pytest.mark.parametrize("program", list(CHEATS.values()), ids=list(CHEATS))
def test_a_cheat_never_passes(sandbox: Sandbox, program: str) -> None:
    result = run(sandbox, program)
    assert not classify(result).passed, (result.stdout, result.stderr)
    assert "LESSONLOOP_SCORE 15/15" not in result.stdout


def test_links_out_of_the_workspace_are_removed_and_reported(sandbox: Sandbox) -> None:
    result = run(sandbox, CHEATS["links its output to the expected answer"])
    assert "sandbox: removed result.json -> /task/expected.json" in result.stderr


def test_the_reference_still_passes_in_two_phases(sandbox: Sandbox) -> None:
    assert TASK.task_dir is not None
    result = run(sandbox, (TASK.task_dir / "reference" / "solution.py").read_text("utf-8"))
    assert classify(result).passed, (result.stdout, result.stderr)
    assert "; then " in result.command


def test_without_the_split_the_same_cheat_would_pass(sandbox: Sandbox) -> None:
    # The control: one process with the task directory, as before the split. If this ever
    # fails, the tests above no longer prove anything.
    assert classify(run(sandbox, CHEATS["copies the expected answer"], split=False)).passed
