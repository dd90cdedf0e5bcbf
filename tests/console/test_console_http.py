"""The console over HTTP (Starlette's TestClient, in process) on a real SQLite + chromadb
store: the token rule, CSRF refusal, escaped output, writes through the memory API, errors.
`python -m agent serve` itself is started for the token and bind rules."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from agent.app.console.app import create_app
from agent.app.console.changes import ChangeLog
from agent.app.console.data import ConsoleData
from agent.app.console.security import COOKIE, ConsoleAccessError, check_bind
from memory import LessonDraft, Memory
from tests.console.seed import XSS, env_for, open_store
from tests.console.server import console

CSRF = "c" * 32
TOKEN = "t0ken-for-the-console-tests"
LOCAL = "http://127.0.0.1:8765"
SECRET = "sk-abcdefghijklmnopqrstuvwxYZ0123456789abcd"


LESSONS = (
    ("KeyError: 'date' in events", "the field is named ts", "read the ts field"),
    (f"{XSS} ValueError", "model output in a log", "escape what you show"),
    ("RecursionError in flatten", "strings are iterable", "treat str as an atom"),
)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with open_store(tmp_path / "store") as store:
        for symptom, cause, fix in LESSONS:
            draft = LessonDraft(
                scope="ops", error_type="E", symptom=symptom, root_cause=cause, fix=fix
            )
            assert store.add(draft).action == "created"
        yield store


@pytest.fixture
def data(memory: Memory, tmp_path: Path) -> ConsoleData:
    changes = ChangeLog(tmp_path / "changes.jsonl")
    return ConsoleData(
        memory, runs_dir=tmp_path / "runs", results_dir=tmp_path / "r", changes=changes
    )


def client(data: ConsoleData, token: str | None = None, base: str = LOCAL) -> TestClient:
    return TestClient(
        create_app(data, token=token, csrf=CSRF), base_url=base, follow_redirects=False
    )


def ids(memory: Memory) -> dict[str, str]:
    return {lesson.symptom.split()[0]: lesson.id for lesson in memory.list_lessons().items}


# -- the token rule ------------------------------------------------------------------------


def test_with_a_token_every_request_needs_it(data: ConsoleData) -> None:
    web = client(data, TOKEN)
    for path in ("/lessons", "/review", "/merges", "/runs", "/health", "/static/console.css"):
        assert web.get(path).status_code == 401, path
    assert web.get("/lessons", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert web.get("/lessons?token=wrong").status_code == 401
    assert web.get("/lessons", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    # The printed URL: the token becomes an HttpOnly, SameSite=strict cookie, then leaves the URL.
    first = web.get(f"/lessons?scope=ops&token={TOKEN}")
    assert first.status_code == 303 and first.headers["location"] == "/lessons?scope=ops"
    assert first.headers["set-cookie"].startswith(f"{COOKIE}={TOKEN};")
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert web.get("/lessons?scope=ops").status_code == 200  # the client kept the cookie
    lesson_id = next(iter(ids(data.memory).values()))
    # A token does not replace the CSRF field.
    assert web.post(f"/lessons/{lesson_id}/approve").status_code == 403


def test_without_a_token_only_loopback_host_names_are_answered(data: ConsoleData) -> None:
    assert client(data, base="http://localhost:9").get("/lessons").status_code == 200
    assert client(data, base="http://[::1]:9").get("/lessons").status_code == 200
    # A page on another site that points its own name at 127.0.0.1 (DNS rebinding).
    assert client(data, base="http://evil.example:8765").get("/lessons").status_code == 421


def test_a_non_loopback_bind_needs_a_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", TOKEN)
    for host in ("0.0.0.0", "192.168.1.7", "example.org", "::"):
        with pytest.raises(ConsoleAccessError, match="without an access token"):
            check_bind(host, None)
    with pytest.raises(ConsoleAccessError, match="at least 16"):
        check_bind("0.0.0.0", "short")


def test_serve_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "serve",
            "--host",
            "0.0.0.0",
            "--memory",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        env=env_for(tmp_path / "home"),
        timeout=120,
    )
    assert proc.returncode == 2 and "without an access token" in proc.stderr
    assert not (tmp_path / "s").exists()  # refused before the store was opened


def test_served_with_a_token_the_printed_url_lets_a_browser_in(tmp_path: Path) -> None:
    open_store(tmp_path / "store").close()  # serve reads a store; it starts none
    with console(tmp_path / "home", tmp_path / "store", tmp_path / "r", "--token", TOKEN) as url:
        assert url.endswith(f"/?token={TOKEN}") and url.startswith("http://127.0.0.1:")
        bare = url.split("?")[0]
        assert httpx.get(bare + "lessons").status_code == 401
        with httpx.Client(follow_redirects=True) as browser:
            page = browser.get(url)
            assert page.status_code == 200 and "Lessons" in page.text
            assert str(page.url) == bare + "lessons"  # the token left the address bar


# -- CSRF ----------------------------------------------------------------------------------


def test_posts_without_the_csrf_field_or_from_another_origin_are_refused(
    data: ConsoleData, memory: Memory
) -> None:
    web = client(data)
    lesson_id = ids(memory)["KeyError:"]
    target = f"/lessons/{lesson_id}/approve"
    assert web.post(target).status_code == 403
    assert web.post(target, data={"csrf": "guessed"}).status_code == 403
    foreign = {"Origin": "http://evil.example"}
    assert web.post(target, data={"csrf": CSRF}, headers=foreign).status_code == 403
    assert memory.get(lesson_id).status == "candidate"  # nothing happened
    done = web.post(target, data={"csrf": CSRF}, headers={"Origin": LOCAL})
    assert done.status_code == 303 and memory.get(lesson_id).status == "validated"


def test_every_form_carries_the_csrf_field(data: ConsoleData, memory: Memory) -> None:
    page = client(data).get(f"/lessons/{ids(memory)['KeyError:']}").text
    assert page.count('method="post"') == page.count(f'name="csrf" value="{CSRF}"') >= 3


# -- escaping ------------------------------------------------------------------------------


def test_lesson_text_is_escaped_everywhere(data: ConsoleData, memory: Memory) -> None:
    web = client(data)
    xss_id = ids(memory)["<script>window.__xss"]
    pages = [
        web.get("/lessons"),
        web.get(f"/lessons/{xss_id}"),
        web.get(
            "/lessons", params={"q": f"{XSS} ValueError", "scope": "ops", "min_similarity": "-1"}
        ),
        web.get("/review"),
    ]
    for page in pages:
        assert page.status_code == 200
        assert "<script>window" not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;window.__xss" in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert xss_id in pages[2].text  # the search found it (the payload is also the query)
    missing = web.get("/lessons/<script>alert(1)</script>")
    assert missing.status_code == 404 and "<script>alert" not in missing.text


# -- writes go through the memory API; errors are pages ------------------------------------


def test_an_edit_is_redacted_reindexed_and_logged(data: ConsoleData, memory: Memory) -> None:
    web = client(data)
    lesson_id = ids(memory)["RecursionError"]
    before = memory.get(lesson_id)
    form = {"csrf": CSRF, "symptom": before.symptom, "root_cause": before.root_cause}
    form["fix"] = f"treat str as an atom; the key was {SECRET}"
    assert web.post(f"/lessons/{lesson_id}/edit", data=form).status_code == 303
    after = memory.get(lesson_id)
    assert after.fix.startswith("treat str as an atom") and SECRET not in after.fix
    assert memory.check().clean  # re-embedded and re-indexed
    (change,) = data.changes.for_lesson(lesson_id)
    assert change.action == "edit" and "fix:" in change.detail and SECRET not in change.detail
    empty = web.post(f"/lessons/{lesson_id}/edit", data={**form, "symptom": "  "})
    assert empty.status_code == 409 and "cannot be empty" in empty.text


def test_a_name_a_one_line_input_cannot_show_is_kept_when_another_field_changes(
    data: ConsoleData, memory: Memory
) -> None:
    # A browser strips line breaks from an <input>'s value: an error type stored with one
    # comes back without it, and must not count as the curator's change.
    lesson_id = ids(memory)["RecursionError"]
    memory.update(lesson_id, error_type="Recursion\nError")
    before = memory.get(lesson_id)
    form = {"csrf": CSRF, "error_type": "RecursionError", "scope": before.scope}
    form |= {"symptom": before.symptom, "root_cause": before.root_cause, "fix": "use a cache"}
    assert client(data).post(f"/lessons/{lesson_id}/edit", data=form).status_code == 303
    after = memory.get(lesson_id)
    assert after.fix == "use a cache" and after.error_type == "Recursion\nError"
    (change,) = data.changes.for_lesson(lesson_id)
    assert change.detail.startswith("fix: ") and "error_type" not in change.detail


def test_refused_changes_and_bad_input_are_clear_error_pages(
    data: ConsoleData, memory: Memory
) -> None:
    web = client(data)
    lesson_id = ids(memory)["KeyError:"]
    assert web.post(f"/lessons/{lesson_id}/deprecate", data={"csrf": CSRF}).status_code == 303
    again = web.post(f"/lessons/{lesson_id}/approve", data={"csrf": CSRF})
    assert again.status_code == 409 and "deprecated" in again.text
    page = web.get(f"/lessons/{lesson_id}").text
    assert f'action="/lessons/{lesson_id}/restore"' in page
    memory.flag_for_review(lesson_id, "deprecated, but learned again by run r1 (seen 2 times)")
    assert web.post(f"/lessons/{lesson_id}/restore", data={"csrf": CSRF}).status_code == 303
    assert memory.get(lesson_id).status == "candidate" and memory.review_flags() == []
    restored = data.changes.for_lesson(lesson_id)[-1]
    assert restored.detail == "status deprecated -> candidate; review flag cleared"
    twice = web.post(f"/review/{lesson_id}/restore", data={"csrf": CSRF})
    assert twice.status_code == 409 and "already candidate" in twice.text
    assert web.get("/lessons/les_nope").status_code == 404
    assert web.get("/runs/nope").status_code == 404
    assert web.get("/merges/mrg_nope").status_code == 404
    undo = web.post("/merges/mrg_nope/undo", data={"csrf": CSRF})
    assert undo.status_code == 404
    assert web.get("/lessons?page=x").status_code == 400
    assert web.get("/lessons?status=bogus").status_code == 400
    assert web.get("/health/learning.png").status_code == 404  # no benchmark results here


def test_health_figures_are_computed_in_the_background_and_recomputed_on_request(
    data: ConsoleData,
) -> None:
    web = client(data)
    first = web.get("/health")
    assert first.status_code == 200 and "duplicate rate" in first.text  # a small store: ready
    computed = data.health().hygiene
    assert computed.report is not None and computed.report.active == 3 and not computed.running
    assert web.post("/health/recompute", data={"csrf": CSRF}).status_code == 303
    again = data.recompute_hygiene(wait_s=30)
    assert again.computed_at is not None and again.computed_at >= computed.computed_at  # type: ignore[operator]
    assert not again.running


def test_a_run_page_shows_what_its_pass_verified(
    data: ConsoleData, memory: Memory, tmp_path: Path
) -> None:
    from tests.console.test_console_trajectory import verified_run

    result = verified_run().model_copy(update={"run_id": "r-verified"})
    memory.record_run(result.run_id, task_id=result.task_id, goal=result.goal, scope="ops")
    run_dir = tmp_path / "runs" / result.run_id
    run_dir.mkdir(parents=True)
    (run_dir / "trajectory.json").write_text(result.model_dump_json())
    page = client(data).get(f"/runs/{result.run_id}").text
    verified = page[page.index('<section id="verified">') : page.index("<h2>Trajectory</h2>")]
    assert "It repaired round 1, which failed" in verified
    assert "The failure's own fix" in verified and "+++ fixed/solution.py" in verified
    assert "taken back: line 4 of solution.py" in verified
    assert "lstrip(&#39;$&#39;)" in verified  # the fix, escaped
    # A run whose pass verified nothing has no such section.
    plain = verified_run().model_copy(update={"run_id": "r-plain", "verified_base": None})
    memory.record_run(plain.run_id, task_id=plain.task_id, goal=plain.goal, scope="ops")
    (tmp_path / "runs" / plain.run_id).mkdir()
    (tmp_path / "runs" / plain.run_id / "trajectory.json").write_text(plain.model_dump_json())
    assert 'id="verified"' not in client(data).get(f"/runs/{plain.run_id}").text


def test_a_run_that_ended_by_an_error_says_so_and_a_merged_lesson_takes_no_edit(
    data: ConsoleData, memory: Memory
) -> None:
    web = client(data)
    memory.record_run("r-crash", task_id="t", scope="ops")
    memory.abort_run("r-crash", "BackendError: cannot reach the server")
    page = web.get("/runs/r-crash").text
    assert "ended by an error" in page and "cannot reach the server" in page
    assert "running" not in web.get("/runs").text.split('id="runs"')[1]
    # An edit POSTed to a merged lesson (the page shows no form) is refused, not lost later.
    member, canonical = ids(memory)["KeyError:"], ids(memory)["RecursionError"]
    memory.set_status(member, "merged", merged_into=canonical)
    form = {"csrf": CSRF, "fix": "changed"}
    refused = web.post(f"/lessons/{member}/edit", data=form)
    assert refused.status_code == 409 and f"merged into {canonical}" in refused.text
    too_long = web.post(f"/lessons/{canonical}/edit", data={"csrf": CSRF, "error_type": "E" * 150})
    assert too_long.status_code == 409 and "too long: error_type" in too_long.text
