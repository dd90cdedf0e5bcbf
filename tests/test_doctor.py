"""`lessonloop doctor`'s checks on real components (no model: see test_e2e_model.py)."""

from __future__ import annotations

from pathlib import Path

from agent.app.doctor import Check, check_build, check_memory, check_sandbox, run_doctor
from agent.app.session import open_memory
from agent.app.settings import Settings
from memory.types import LessonDraft


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(home=tmp_path / "home", embedder="hash", **values)  # type: ignore[arg-type]


def test_memory_check_leaves_an_existing_store_usable(tmp_path: Path) -> None:
    s = settings(tmp_path)
    store = open_memory(s)
    store.add(
        LessonDraft(error_type="KeyError", symptom="KeyError 'amount'", root_cause="BOM in header",
                    fix="open with encoding='utf-8-sig'")
    )  # fmt: skip
    store.close()
    result = check_memory(s)
    assert result.ok, result.detail
    assert "opens, consistent" in result.detail
    # The store still opens with its own embedder and holds exactly its lesson.
    again = open_memory(s)
    assert again.list_lessons().total == 1
    again.close()
    assert not [p for p in (tmp_path / "home").iterdir() if p.name.startswith(".doctor-")]


def test_memory_check_does_not_create_the_store(tmp_path: Path) -> None:
    s = settings(tmp_path)
    result = check_memory(s)
    assert result.ok and "not created yet" in result.detail
    assert not (tmp_path / "home" / "memory").exists()


def test_memory_check_names_an_unusable_location(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = check_memory(settings(tmp_path, memory=str(blocker / "sub" / "memory")))
    assert not result.ok and result.remedy


def test_sandbox_and_build_checks_pass_here(tmp_path: Path) -> None:
    assert check_sandbox(settings(tmp_path)).ok
    build = check_build(settings(tmp_path))
    assert build.ok and "portable" in build.detail, build.detail


def test_a_check_that_raises_is_one_failed_line_not_a_crash(tmp_path: Path) -> None:
    def check_broken(_: Settings) -> Check:
        raise AttributeError("no such thing")

    def check_fine(_: Settings) -> Check:
        return Check(name="fine", ok=True, detail="ok")

    report = run_doctor(settings(tmp_path), checks=[check_broken, check_fine])
    broken, fine = report.checks
    assert broken.name == "broken" and not broken.ok and "AttributeError" in broken.detail
    assert fine.ok and not report.ok
