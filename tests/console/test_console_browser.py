"""The console in a real browser: headless Debian chromium driven by Selenium (chromedriver
from apt, no browser download), against `python -m agent serve` on a free loopback port over
a real SQLite + chromadb store seeded with a real run, lessons and a merge.

Loads every page, searches, opens lessons, approves one, deprecates one, clears a review
flag, undoes a merge; then stops the server and checks the store changed accordingly.
Screenshots are kept under tests/artifacts/console/ (ignored by git).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import LessonNotFoundError
from tests.console.seed import ODD_ROOT_CAUSE, ODD_SYMPTOM, XSS, Seeded, build, open_store
from tests.console.server import console

CHROMIUM = Path("/usr/bin/chromium")
EDITED = "edited in the console"
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "console"

webdriver = pytest.importorskip("selenium.webdriver")
if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip(
        "needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium "
        "chromium-driver; scripts/install.sh does)",
        allow_module_level=True,
    )

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.expected_conditions import staleness_of  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return build(tmp_path_factory.mktemp("console"))


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: WebDriver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1400, max(1000, min(int(height) + 40, 4000)))
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    driver.set_window_size(1400, 1000)


def navigate(driver: WebDriver, element: WebElement) -> None:
    """Click something that loads a new page and wait until the old page is gone, so the
    reads that follow see the new page (reading mid-navigation gives stale elements)."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 20).until(staleness_of(old))


def click_and_confirm(driver: WebDriver, selector: str) -> None:
    """Click a button that asks first (data-confirm), accept the question, wait for the post."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, selector).click()
    alert = driver.switch_to.alert
    assert alert.text  # the question is asked
    alert.accept()
    WebDriverWait(driver, 20).until(staleness_of(old))


def test_curator_session_in_a_real_browser(seeded: Seeded, browser: WebDriver) -> None:
    with console(seeded.home, seeded.store, seeded.results) as url:
        base = url.rstrip("/")
        _pages(browser, base, seeded)
        _search(browser, base, seeded)
        _approve_deprecate(browser, base, seeded)
        _review(browser, base, seeded)
        _xss_is_inert(browser, base, seeded)
        _undo_merge(browser, base, seeded)
    _store_changed(seeded)


def _pages(driver: WebDriver, base: str, s: Seeded) -> None:
    driver.get(base + "/")
    assert driver.current_url == base + "/lessons"
    rows = driver.find_elements(By.CSS_SELECTOR, "#lessons tr.lesson-row")
    assert len(rows) == 9  # 7 seeded, the lesson the run wrote, the merge's new canonical
    assert "9 match" in driver.find_element(By.TAG_NAME, "h1").text
    shot(driver, "lessons")
    Select(driver.find_element(By.NAME, "status")).select_by_visible_text("merged")
    navigate(driver, driver.find_element(By.ID, "go"))
    merged = {e.text for e in driver.find_elements(By.CSS_SELECTOR, "#lessons td a.mono")}
    assert merged == set(s.merged)
    driver.get(base + "/review")
    assert s.flagged in driver.find_element(By.ID, "flagged").text
    shot(driver, "review")
    driver.get(base + "/merges")
    assert s.merge_id in driver.find_element(By.ID, "merges").text
    driver.get(base + "/runs")
    assert s.run_id in driver.find_element(By.ID, "runs").text
    navigate(driver, driver.find_element(By.LINK_TEXT, s.run_id))
    assert driver.find_element(By.ID, "round-1").is_displayed()
    round_2 = driver.find_element(By.ID, "round-2").text
    assert "utf-8-sig" in round_2 and "success" in round_2  # the diff and the verdict
    assert s.run_lesson in driver.page_source  # the lesson the run wrote, linked
    shot(driver, "run")
    driver.get(base + "/health")
    assert "duplicate rate" in driver.find_element(By.ID, "hygiene").text
    curve = driver.find_element(By.ID, "curve")
    assert driver.execute_script("return arguments[0].naturalWidth", curve) > 0
    shot(driver, "health")


def _search(driver: WebDriver, base: str, s: Seeded) -> None:
    driver.get(base + "/lessons")
    driver.find_element(By.ID, "q").send_keys("amount strings with a dollar currency sign")
    Select(driver.find_element(By.NAME, "scope")).select_by_visible_text("demo")
    navigate(driver, driver.find_element(By.ID, "go"))
    hits = driver.find_elements(By.CSS_SELECTOR, "#hits tr.hit")
    assert hits, driver.page_source
    first = hits[0].text
    assert s.canonical in first  # the merged lessons are not recalled, their canonical is
    assert "relevance" in first and "recency" in first  # why it ranked
    assert not any(m in driver.page_source for m in s.merged)
    shot(driver, "search")


def _approve_deprecate(driver: WebDriver, base: str, s: Seeded) -> None:
    driver.get(base + "/lessons?scope=ops")
    navigate(driver, driver.find_element(By.LINK_TEXT, s.to_approve))
    assert driver.current_url.endswith(f"/lessons/{s.to_approve}")
    navigate(driver, driver.find_element(By.CSS_SELECTOR, ".actions button.ok"))
    assert "approve" in driver.find_element(By.ID, "notice").text
    assert driver.find_element(By.CSS_SELECTOR, "h1 .status").text == "validated"
    assert "candidate -> validated" in driver.find_element(By.ID, "changes").text
    fix = driver.find_element(By.CSS_SELECTOR, "#edit textarea[name=fix]")
    fix.clear()
    fix.send_keys(f"read the 'ts' field; {EDITED}")
    navigate(driver, driver.find_element(By.CSS_SELECTOR, "#edit button"))
    assert EDITED in driver.find_element(By.ID, "fix").text
    shot(driver, "lesson")
    driver.get(f"{base}/lessons/{s.to_deprecate}")
    click_and_confirm(driver, ".actions button.danger")
    assert driver.find_element(By.CSS_SELECTOR, "h1 .status").text == "deprecated"
    # Deprecated lessons cannot be approved: only Restore is offered. Restore, then retire it
    # again (the store check at the end expects it deprecated).
    (button,) = driver.find_elements(By.CSS_SELECTOR, ".actions button")
    assert button.text == "Restore"
    click_and_confirm(driver, ".actions button.ok")
    assert driver.find_element(By.CSS_SELECTOR, "h1 .status").text == "candidate"
    assert "deprecated -> candidate" in driver.find_element(By.ID, "changes").text
    click_and_confirm(driver, ".actions button.danger")
    assert driver.find_element(By.CSS_SELECTOR, "h1 .status").text == "deprecated"


def _review(driver: WebDriver, base: str, s: Seeded) -> None:
    driver.get(base + "/review")
    keep = f"form[action='/review/{s.flagged}/keep'] button"
    navigate(driver, driver.find_element(By.CSS_SELECTOR, keep))
    assert f"keep:{s.flagged}" in driver.find_element(By.ID, "notice").text
    assert s.flagged not in driver.find_element(By.ID, "flagged").text


def _xss_is_inert(driver: WebDriver, base: str, s: Seeded) -> None:
    driver.get(f"{base}/lessons/{s.xss}")
    assert XSS in driver.find_element(By.ID, "symptom").text  # shown as text...
    assert driver.execute_script("return window.__xss") is None  # ...never run
    assert not driver.find_elements(By.CSS_SELECTOR, "#symptom img, #symptom script")
    driver.get(base + "/lessons?scope=ops")
    assert driver.execute_script("return window.__xss") is None


def _undo_merge(driver: WebDriver, base: str, s: Seeded) -> None:
    driver.get(f"{base}/merges/{s.merge_id}")
    before = driver.page_source
    assert all(m in before for m in s.merged) and s.canonical in before
    shot(driver, "merge")
    click_and_confirm(driver, "#state button.danger")
    assert "undone" in driver.find_element(By.ID, "state").text
    driver.get(base + "/lessons?status=merged")
    assert "no lessons match" in driver.find_element(By.ID, "lessons").text


def _store_changed(s: Seeded) -> None:
    with open_store(s.store) as memory:
        approved = memory.get(s.to_approve)
        assert approved.status == "validated" and approved.fix.endswith(EDITED)
        # Only the field the curator changed was written; the others kept their exact text.
        assert (approved.symptom, approved.root_cause) == (ODD_SYMPTOM, ODD_ROOT_CAUSE)
        assert memory.get(s.to_deprecate).status == "deprecated"
        assert memory.get(s.flagged).status == "candidate"
        assert s.flagged not in memory.flagged_ids([s.flagged])
        for lesson_id in s.merged:
            restored = memory.get(lesson_id)
            assert restored.status == "candidate" and restored.merged_into is None
        with pytest.raises(LessonNotFoundError):
            memory.get(s.canonical)  # the merge created it; the undo removed it
        assert memory.check().clean  # the index followed every change
    log = (s.home / "console" / "changes.jsonl").read_text()
    (edit,) = [e for e in map(json.loads, log.splitlines()) if e["action"] == "edit"]
    assert edit["detail"].startswith("fix: ") and "root_cause" not in edit["detail"]
    for lesson_id in (s.to_approve, s.to_deprecate, s.flagged, *s.merged):
        assert lesson_id in log


def test_docs_screenshot_is_current() -> None:
    """The README's screenshot is a PNG (copied from a run of the test above)."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "console.png"
    assert docs.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
