"""Small builders shared by the loop tests (no patching: real sandbox, scripted LLM)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.loop import LoopConfig
from agent.task import Task

# One candidate per round: for tests of what a round does, not of its search.
ONE_DRAW = LoopConfig(pool_size=1, first_pool=1)

GEN = "careful Python programmer"
CRITIC = "strict reviewer"
REFINE = "You repair"


def code(body: str, name: str = "solution.py") -> str:
    return f"### {name}\n```python\n{body}\n```"


def fix(body: str, note: str = "handle the input", name: str = "solution.py") -> str:
    return f"Phenomenon: it failed\nRoot cause: wrong assumption\nFix: {note}\n" + code(body, name)


def critique(passed: bool, score: int, feedback: str = "", issues: tuple[str, ...] = ()) -> str:
    return json.dumps(
        {"passed": passed, "score": score, "feedback": feedback, "issues": list(issues)}
    )


def write_task_dir(task_dir: Path, *, inputs: dict[str, str], checker: str, toml: str) -> Path:
    """A task directory on disk: `inputs` in its workspace, `checker` as check.py, `toml`
    as task.toml."""
    (task_dir / "workspace").mkdir(parents=True)
    for name, body in inputs.items():
        (task_dir / "workspace" / name).write_text(body)
    (task_dir / "check.py").write_text(checker)
    (task_dir / "task.toml").write_text(toml)
    return task_dir


def make_task(
    tmp_path: Path,
    *,
    check: str | None = 'python solution.py && python "$TASK_DIR/check.py"',
    checker: str = "import json; assert json.load(open('out.json')) == 42, 'expected 42'",
    output: tuple[str, ...] = ("solution.py",),
    goal: str = "Write 42 to out.json",
) -> Task:
    task_dir = tmp_path / "task"
    (task_dir / "workspace").mkdir(parents=True)
    (task_dir / "workspace" / "input.txt").write_text("6 7\n")
    (task_dir / "check.py").write_text(checker)
    return Task(id="t", goal=goal, output=output, check=check, timeout_s=20, task_dir=task_dir)


GOOD = "import json\njson.dump(42, open('out.json', 'w'))"
WRONG = "import json\njson.dump(41, open('out.json', 'w'))"
CRASH = "import json\nx = {}['missing']\njson.dump(42, open('out.json', 'w'))"
