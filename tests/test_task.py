"""Task loading and the workspace preview the generator sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.errors import TaskFormatError
from agent.task import load_task, preview_bytes


def write_task(root: Path, toml: str) -> Path:
    (root / "workspace").mkdir(parents=True)
    (root / "task.toml").write_text(toml)
    return root


def test_load_task_reads_the_format(tmp_path: Path) -> None:
    root = write_task(
        tmp_path / "t1",
        'goal = "g"\noutput = ["a.py"]\ncheck = "python a.py"\ntimeout_s = 5\n'
        'tags = ["csv"]\nscope = "demo"\n',
    )
    task = load_task(root)
    assert task.id == "t1" and task.output == ("a.py",) and task.scope == "demo"
    assert task.workspace == root / "workspace"


def test_a_task_toml_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "latin"
    root.mkdir()
    (root / "task.toml").write_bytes('goal = "café"\n'.encode("latin-1"))
    with pytest.raises(TaskFormatError, match=r"task.toml: not UTF-8 \(invalid continuation"):
        load_task(root)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('goal = "g"\nbogus = 1\n', "unknown keys"),
        ("goal = \n", "invalid TOML"),
        ('output = ["a.py"]\n', "goal"),
        ('goal = "g"\noutput = ["../escape.py"]\n', "relative path"),
        ('goal = "g"\noutput = ["/etc/passwd"]\n', "relative path"),
        ('goal = "g"\ntimeout_s = 0\n', "timeout_s"),
        ('goal = "g"\ntimeout_s = inf\n', "timeout_s"),  # int(inf) crashed the run
        ('goal = "g"\ntimeout_s = 1e400\n', "timeout_s"),
        # Lessons are filed under the scope: one the memory cannot store fails here, not
        # after the run.
        ('goal = "g"\nscope = ""\n', "scope"),
        (f'goal = "g"\nscope = "{"s" * 201}"\n', "scope"),
    ],
)
def test_malformed_task_is_a_clear_error(tmp_path: Path, toml: str, message: str) -> None:
    root = write_task(tmp_path / "bad", toml)
    with pytest.raises(TaskFormatError, match=message):
        load_task(root)


def test_missing_task_toml(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="no task.toml"):
        load_task(tmp_path)


def test_preview_makes_bom_and_encoding_visible() -> None:
    assert preview_bytes("\ufeffid,amount\n".encode()) == "\\ufeffid,amount\n"
    latin = preview_bytes("name\nJosé\n".encode("latin-1"))
    assert latin.startswith("[not valid UTF-8: byte 0xe9")
    # a multi-byte character cut by the preview bound is not an encoding problem
    assert preview_bytes("abcé".encode()[:-1], cut=True) == "abc"


def test_run_without_check_is_refused(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "task.toml").write_text('goal = "g"\nrun = "python solution.py"\n')
    with pytest.raises(TaskFormatError, match="run needs a check"):
        load_task(tmp_path)


def test_a_check_naming_a_task_file_that_is_not_there_is_refused_at_load(tmp_path: Path) -> None:
    (tmp_path / "check.py").write_text("print('ok')\n")
    (tmp_path / "data").mkdir()
    for check in ('python "$TASK_DIR/chek.py" result.json', "python ${TASK_DIR}/chek.py"):
        (tmp_path / "task.toml").write_text(f"goal = 'g'\ncheck = '{check}'\n")
        with pytest.raises(TaskFormatError, match=r"the check runs \$TASK_DIR/chek.py, not in"):
            load_task(tmp_path)
    # What is there loads, and so does a path the shell builds at run time.
    for check in ('python "$TASK_DIR/check.py" "$TASK_DIR/data"', "ls $TASK_DIR/*.py"):
        (tmp_path / "task.toml").write_text(f"goal = 'g'\ncheck = '{check}'\n")
        assert load_task(tmp_path).check == check
