"""The exported HTML page in a real headless Chromium: it renders, folds, and runs nothing planted.

Debian's ``chromium`` and ``chromium-driver`` are driven by Selenium with explicit paths, so
nothing is downloaded (ADR 0110). Without them the tests skip, unless ``ROLLOUT_REQUIRE_BROWSER``
is set (CI sets it), in which case a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ledger import Message, Reasoning, StopKind, ToolCall
from replay import read_replay
from replay.export import to_html
from rollout_files import RolloutBuilder

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRED = bool(os.environ.get("ROLLOUT_REQUIRE_BROWSER"))

PLANTED_SCRIPT = "<script>document.title='pwned'; window.pwned = 1;</script>"
PLANTED_IMG = "<img src=x onerror=\"document.title='pwned'; window.pwned = 2;\">"
HUGE_LINE = "W" * 200_000


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.is_file():
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """One headless Chromium for the module, with a fresh profile and home, networking off."""
    missing = _missing()
    if missing is not None:
        if REQUIRED:
            pytest.fail(f"ROLLOUT_REQUIRE_BROWSER is set but {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    home = tmp_path_factory.mktemp("browser-home")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1024,768",
        f"--user-data-dir={home / 'profile'}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The module fixture starts before the per-test home guard, so the browser gets its own.
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    service = Service(executable_path=str(CHROMEDRIVER), env=env)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(10)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The export of a session whose text plants a script and an image with an onerror handler."""
    directory = tmp_path_factory.mktemp("export")
    call = ToolCall(id="call_1", name="shell", arguments='{"cmd": "cat huge.txt"}')
    path = (
        RolloutBuilder(directory, session_id="page-1")
        .add(
            Message(role="user", content=f"Please look. {PLANTED_SCRIPT} {PLANTED_IMG}"),
            Message(
                role="assistant",
                content="Looking now.",
                reasoning=(Reasoning(text="The secret plan is to read the file."),),
                tool_calls=(call,),
            ),
            Message(role="tool", tool_call_id="call_1", content=HUGE_LINE),
            Message(role="assistant", content="All done </article></main> javascript:x"),
        )
        .stop(StopKind.PAUSED, PLANTED_SCRIPT)
        .write()
    )
    out = directory / "page-1.html"
    out.write_text(to_html(read_replay(path, whole_file=True)), encoding="utf-8")
    return out.as_uri()


@pytest.fixture
def loaded(browser: WebDriver, page_url: str) -> WebDriver:
    """The browser with the exported page freshly loaded."""
    browser.get(page_url)
    return browser


def test_the_transcript_renders_with_roles_and_text(loaded: WebDriver) -> None:
    """Every message is drawn with its role, and the stylesheet applies (its hash is the CSP's)."""
    from selenium.webdriver.common.by import By

    articles = loaded.find_elements(By.CSS_SELECTOR, "article.msg")
    roles = [
        a.find_element(By.CSS_SELECTOR, ".role").get_attribute("textContent") for a in articles
    ]
    assert roles == ["user", "assistant", "assistant"]
    assert "Please look." in articles[0].text
    assert PLANTED_SCRIPT in articles[0].text  # shown as text
    assert "Looking now." in articles[1].text
    border = loaded.execute_script(
        "return getComputedStyle(arguments[0]).borderLeftWidth", articles[0]
    )
    assert border == "4px"


def test_reasoning_opens_and_closes_on_its_summary(loaded: WebDriver) -> None:
    """Reasoning starts folded; a click on its summary shows it, a second click folds it again."""
    from selenium.webdriver.common.by import By

    details = loaded.find_element(By.CSS_SELECTOR, "details.reasoning")
    text = details.find_element(By.TAG_NAME, "pre")
    summary = details.find_element(By.TAG_NAME, "summary")
    assert details.get_attribute("open") is None
    assert not text.is_displayed()
    summary.click()
    assert details.get_attribute("open") is not None
    assert text.is_displayed()
    assert text.text == "The secret plan is to read the file."
    summary.click()
    assert details.get_attribute("open") is None
    assert not text.is_displayed()


def test_a_planted_script_never_runs(loaded: WebDriver) -> None:
    """The title is the page's own, nothing planted ran or entered the DOM, nothing was fetched."""
    from selenium.webdriver.common.by import By

    assert loaded.title == "Session page-1 · rollout"
    assert loaded.execute_script("return window.pwned === undefined") is True
    assert loaded.find_elements(By.TAG_NAME, "script") == []
    assert loaded.find_elements(By.TAG_NAME, "img") == []
    assert loaded.find_elements(By.CSS_SELECTOR, "[onerror], [onload], [onclick]") == []
    assert loaded.execute_script("return performance.getEntriesByType('resource').length") == 0
    blocked = [e for e in loaded.get_log("browser") if "Content Security Policy" in e["message"]]
    assert blocked == []


def test_a_huge_line_wraps_inside_the_page(loaded: WebDriver) -> None:
    """A 200,000-character line is wrapped: the page never scrolls sideways."""
    assert loaded.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    assert HUGE_LINE[:1000] in loaded.page_source
