"""The sandbox on real subprocesses: isolation, limits, cleanup, and what classify() makes of them.

Every test runs real commands in bubblewrap; nothing is mocked. Each isolation test also
shows that the thing it blocks works outside the sandbox, so the test can fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from agent.classify import classify
from agent.container import Limits
from agent.errors import ModelOutputError, SandboxError, UnsafePathError
from agent.sandbox import ExecResult, Sandbox

# Small limits keep the limit tests fast; PATH in the sandbox starts with our interpreter.
FAST = Limits(cpu_s=10, memory_mb=512, file_size_mb=1, max_procs=32, output_bytes=2_000)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(FAST)


def run(
    sb: Sandbox,
    command: str,
    files: Mapping[str, str] | None = None,
    *,
    workspace: Path | None = None,
    task_dir: Path | None = None,
    timeout_s: float = 20,
    log_path: Path | None = None,
) -> ExecResult:
    return sb.run(
        command,
        files=files or {},
        workspace=workspace,
        task_dir=task_dir,
        timeout_s=timeout_s,
        log_path=log_path,
    )


def processes_named(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # the process ended while we looked
                continue
    return found


def test_success_runs_in_a_fresh_workspace_with_task_dir(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "expected.txt").write_text("42\n")
    result = run(
        sandbox,
        'python solution.py > out.txt && diff out.txt "$TASK_DIR/expected.txt" '
        '&& test "$HOME" = "$PWD" && id -u',
        {"solution.py": "print(6 * 7)"},
        task_dir=tmp_path,
    )
    assert result.exit_code == 0, result.stderr
    if os.geteuid() == 0:
        assert result.stdout.strip() != "0", "generated code must not run as root"
    feedback = classify(result)
    assert feedback.kind == "success" and feedback.stage == "execution"
    assert not result.workspace.exists(), "workspaces are removed unless kept"


def test_syntax_error_gives_file_line_and_code(sandbox: Sandbox) -> None:
    result = run(sandbox, "python solution.py", {"solution.py": "x = 1\ndef f(:\n    pass\n"})
    feedback = classify(result)
    assert feedback.kind == "syntax_error"
    assert feedback.location == "solution.py:2"
    assert feedback.failing_example == "def f(:"


def test_syntax_error_in_an_imported_module(sandbox: Sandbox) -> None:
    files = {"main.py": "import helper\n", "helper.py": "def g():\n\treturn 1\n        return 2\n"}
    feedback = classify(run(sandbox, "python main.py", files))
    assert feedback.kind == "syntax_error"
    assert feedback.error_type in {"IndentationError", "TabError"}
    assert feedback.location == "helper.py:3"


def test_exception_gives_type_location_and_message(sandbox: Sandbox) -> None:
    code = "def load(d):\n    return d['missing']\n\nload({})\n"
    feedback = classify(run(sandbox, "python solution.py", {"solution.py": code}))
    assert feedback.kind == "runtime_error"
    assert feedback.error_type == "KeyError"
    assert feedback.location == "solution.py:2"
    assert feedback.key_message == "KeyError: 'missing'"
    assert feedback.failing_example == "return d['missing']"


def test_timeout_kills_everything_it_started(sandbox: Sandbox) -> None:
    marker = f"lessonloop-test-{uuid.uuid4().hex}"
    # A detached daemon in its own session, then a foreground sleep that outlives the timeout.
    command = f"setsid bash -c 'exec -a {marker} sleep 300' & sleep 1; echo started; sleep 300"
    result = run(sandbox, command, timeout_s=1.5)
    assert result.timed_out and result.exit_code is None
    assert result.duration_s < 5
    assert "started" in result.stdout
    feedback = classify(result)
    assert feedback.kind == "timeout"
    assert processes_named(marker) == []


def test_detached_processes_die_when_the_command_ends(sandbox: Sandbox) -> None:
    marker = f"lessonloop-test-{uuid.uuid4().hex}"
    result = run(sandbox, f"setsid bash -c 'exec -a {marker} sleep 300' & sleep 0.2; exit 0")
    assert result.exit_code == 0 and not result.timed_out
    assert result.duration_s < 5, "the run must not wait for a detached process"
    assert processes_named(marker) == []


def test_memory_blowup_is_a_resource_error(sandbox: Sandbox) -> None:
    code = "data = bytearray(4 << 30)\n"  # 4 GiB against 512 MiB of address space
    feedback = classify(run(sandbox, "python solution.py", {"solution.py": code}))
    assert feedback.kind == "resource_error"
    assert feedback.error_type == "MemoryError"
    assert feedback.location == "solution.py:1"


def test_cpu_limit_is_a_resource_error_not_a_timeout() -> None:
    sb = Sandbox(Limits(cpu_s=1))
    result = run(sb, "python -c 'while True: pass'", timeout_s=15)
    assert not result.timed_out
    feedback = classify(result)
    assert feedback.kind == "resource_error"
    assert feedback.error_type == "SIGXCPU"


def test_file_size_limit_is_a_resource_error(sandbox: Sandbox) -> None:
    code = "with open('big.bin', 'wb') as f:\n    f.write(b'x' * (2 << 20))\n"  # 2 MiB > 1 MiB
    feedback = classify(run(sandbox, "python solution.py", {"solution.py": code}))
    assert feedback.kind == "resource_error"
    assert "[Errno 27]" in (feedback.key_message or "")


def test_process_limit_stops_a_fork_bomb(sandbox: Sandbox) -> None:
    code = (
        "import os, time\n"
        "for i in range(200):\n"  # bounded: without the limit this would start 200 sleepers
        "    if os.fork() == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    print(i, flush=True)\n"
    )
    result = run(sandbox, "python solution.py", {"solution.py": code})
    forks = len(result.stdout.split())
    assert forks < FAST.max_procs, result.stdout
    feedback = classify(result)
    assert feedback.kind == "resource_error"
    assert feedback.error_type == "BlockingIOError"
    assert result.duration_s < 10, "children must die with the command, not be waited for"


@pytest.fixture
def tcp_server() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_network_is_unreachable_from_the_sandbox(sandbox: Sandbox, tcp_server: int) -> None:
    # The same connection works from here: the server is real and listening.
    socket.create_connection(("127.0.0.1", tcp_server), timeout=2).close()
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=2)\n"  # TEST-NET-1, off-host
        "except OSError as exc:\n"
        "    print('external:', exc)\n"
        f"socket.create_connection(('127.0.0.1', {tcp_server}), timeout=2)\n"
        "print('connected')\n"
    )
    result = run(sandbox, "python solution.py", {"solution.py": code})
    assert "connected" not in result.stdout
    assert "Network is unreachable" in result.stdout
    feedback = classify(result)
    assert feedback.kind == "runtime_error"
    assert feedback.error_type == "ConnectionRefusedError"
    assert feedback.location == "solution.py:6"
    assert any("network" in issue for issue in feedback.issues)


def test_secrets_never_reach_generated_code(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-test-secret-openai",
        "ANTHROPIC_API_KEY": "sk-ant-test-secret",
        "GITHUB_TOKEN": "ghp_testsecrettoken",
        "DATABASE_PASSWORD": "hunter2-test-secret",
        "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    # Also look at every process's environment the sandbox can see.
    command = (
        "python -c 'import os; print(dict(os.environ))'; "
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'"
    )
    result = run(sandbox, command)
    assert result.exit_code == 0
    assert "PYTHONHASHSEED" in result.stdout  # the environment was printed
    for name, value in secrets.items():
        assert name not in result.stdout and value not in result.stdout


def test_output_is_truncated_head_and_tail_and_logged(sandbox: Sandbox, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "run.log"
    result = run(
        sandbox,
        'python -c \'print("\\n".join(f"line {i}" for i in range(200_000)))\'',
        log_path=log,
    )
    assert result.exit_code == 0 and result.truncated
    assert len(result.stdout.encode()) < FAST.output_bytes + 100
    assert result.stdout.startswith("line 0\n")
    assert result.stdout.rstrip().endswith("line 199999")
    assert "bytes omitted" in result.stdout
    logged = log.read_text()
    assert "line 0\n" in logged and "line 199999" in logged
    assert 500_000 < len(logged) < 1_100_000  # much more than the result, still bounded


@pytest.mark.parametrize("name", ["../evil.py", "a/../../evil.py", "/tmp/evil.py", ""])
def test_paths_escaping_the_workspace_are_rejected(sandbox: Sandbox, name: str) -> None:
    with pytest.raises(UnsafePathError) as caught:
        run(sandbox, "true", {"ok.py": "", name: "print('pwned')"})
    assert isinstance(caught.value, ModelOutputError)  # the loop turns it into feedback
    assert caught.value.path == name


def test_symlink_in_the_workspace_cannot_redirect_writes(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "data").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        run(sandbox, "true", {"data/evil.py": "x"}, workspace=workspace)
    assert list(outside.iterdir()) == []


def test_filesystem_outside_the_sandbox_is_hidden_or_read_only(sandbox: Sandbox) -> None:
    project_file = Path(__file__).resolve()
    assert project_file.exists()
    command = (
        f"test ! -e {project_file} && test ! -e /etc/shadow && test ! -e /etc/pip.conf && "
        "! touch /usr/evil 2>/dev/null && echo isolated"
    )
    result = run(sandbox, command)
    assert result.stdout.strip() == "isolated", result.stderr


def test_checker_assertion_is_check_failed_without_checker_source(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    (tmp_path / "check.py").write_text(
        "import os, sys\n"
        "sys.path.insert(0, os.getcwd())\n"
        "from solution import add\n"
        "got = add(2, 2)\n"
        "assert got == 4, f'add(2, 2) returned {got}, expected 4'\n"
    )
    result = run(
        sandbox,
        'python "$TASK_DIR/check.py"',
        {"solution.py": "def add(a, b):\n    return a - b\n"},
        task_dir=tmp_path,
    )
    feedback = classify(result)
    assert feedback.kind == "check_failed"
    assert feedback.error_type == "AssertionError"
    assert feedback.key_message == "AssertionError: add(2, 2) returned 0, expected 4"
    assert "assert got == 4" not in feedback.compressed() + feedback.summary


def test_workspace_is_copied_fresh_for_every_attempt(sandbox: Sandbox, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "input.txt").write_text("original\n")
    first = run(
        sandbox,
        "echo junk > leftover.txt && echo changed > data/input.txt && cat data/input.txt",
        workspace=workspace,
    )
    assert first.stdout == "changed\n", first.stderr
    second = run(sandbox, "test ! -e leftover.txt && cat data/input.txt", workspace=workspace)
    assert second.exit_code == 0 and second.stdout == "original\n"
    assert (workspace / "data" / "input.txt").read_text() == "original\n"
    assert first.workspace != second.workspace


def test_kept_workspace_holds_the_outputs(tmp_path: Path) -> None:
    sb = Sandbox(FAST, keep_workspaces=True)
    result = run(sb, "echo hi > made.txt", {"pkg/solution.py": "x = 1\n"})
    try:
        assert (result.workspace / "made.txt").read_text() == "hi\n"
        assert (result.workspace / "pkg" / "solution.py").read_text() == "x = 1\n"
    finally:
        shutil.rmtree(result.workspace.parent)


def test_missing_bubblewrap_is_a_sandbox_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxError, match="bubblewrap"):
        Sandbox(FAST)


def test_the_start_of_what_the_program_wrote_reaches_a_check_that_names_the_file(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # jsonl_01 on the 1.5B wrote "u1: 12.5" lines to result.json for two rounds; the check
    # said only "result.json is not valid JSON: Expecting value (line 1, column 1)".
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "events.jsonl").write_text('{"user": "u1"}\n')
    task = tmp_path / "task"
    task.mkdir()
    (task / "check.py").write_text(
        "import json, sys\n"
        "try:\n    json.load(open('result.json'))\n"
        "except ValueError as exc:\n    sys.exit(f'result.json is not valid JSON: {exc}')\n"
    )
    check = 'python "$TASK_DIR/check.py" result.json'

    program = (
        "import os\n"
        "open('result.json', 'w').write('u1: 12.5\\nu2: 3.0\\n' + 'x' * 500)\n"
        "open('notes.txt', 'w').write('scratch')\n"
        "os.symlink('/etc/hostname', 'link.json')\n"
        "os.symlink('/etc', 'etcdir')\n"
        "os.mkfifo('pipe.json')\n"
        "for name in ('a.txt', 'b.txt', 'c.txt'):\n    open(name, 'w').write(name)\n"
    )
    result = sandbox.run(
        check, program="python solution.py",
        files={"solution.py": program}, workspace=ws, task_dir=task, timeout_s=20,
    )  # fmt: skip
    # New regular files only (not the input, the program, a link or a FIFO), at most three,
    # the one the check command names first.
    assert set(result.written) == {"result.json", "a.txt", "b.txt"}
    head = result.written["result.json"]
    assert head.startswith("u1: 12.5\nu2: 3.0\nxxx") and head.endswith("...") and len(head) == 203
    feedback = classify(result)
    assert feedback.kind == "check_failed"
    assert feedback.program_wrote is not None
    assert feedback.program_wrote.startswith("result.json: 'u1: 12.5\\nu2: 3.0\\nxxx")
    assert "a.txt" not in feedback.program_wrote  # the check's message does not name it
    assert "the program wrote: result.json: 'u1: 12.5" in feedback.compressed()
    assert "the program wrote" not in feedback.compressed(program=False)


def test_a_check_about_a_value_inside_the_file_gets_no_copy_of_it() -> None:
    from agent.classify import program_wrote

    written = {"result.json": '{"a": 1}', "out/report.md": "# R"}
    assert program_wrote(written, "result.json['a']: wrong value, got 1") is None
    # A key too many inside it: the keys the program wrote are what the refiner compares.
    shape = "result.json['a']: unexpected key 'sum'"
    assert program_wrote(written, shape) == "result.json: '{\"a\": 1}'"
    assert program_wrote(written, "result.json: missing key 'b'") == "result.json: '{\"a\": 1}'"
    assert program_wrote(written, "report.md has no title") == "out/report.md: '# R'"
    assert program_wrote(written, "old_result.json.bak is stale") is None
    assert program_wrote(written, "result.json.total is missing") is None
    assert program_wrote(written, "wrote result.json.") == "result.json: '{\"a\": 1}'"
    assert program_wrote({"out": "x"}, "check out: the totals") is None


def test_a_program_that_crashed_leaves_no_written_heads(sandbox: Sandbox, tmp_path: Path) -> None:
    # Only a program that exited by itself is read after: none of its processes is left.
    result = sandbox.run(
        "true", program="python solution.py", workspace=None, task_dir=None, timeout_s=20,
        files={"solution.py": "open('result.json', 'w').write('{}')\nraise SystemExit(3)\n"},
    )  # fmt: skip
    assert result.written == {}
