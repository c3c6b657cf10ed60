"""The dashboard in a real browser: headless Chromium driven by selenium, against uvicorn
serving the app on a loopback port, on SQLite and PostgreSQL.

Chromium and chromedriver are Debian's ``chromium`` and ``chromium-driver``
(.ci/run installs them); without them these tests skip, saying so. With
PYSCHED_WEB_SCREENSHOTS set to a folder, the page tour saves a PNG of each
page there (docs/images holds the ones the docs show).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from support import dashboard_data
from support.durable import postgres_url, unique_table

uvicorn = pytest.importorskip("uvicorn", reason="the dashboard needs the web extra")
pytest.importorskip("selenium", reason="the browser tests need selenium (the test extra)")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from pysched import durable  # noqa: E402
from pysched.web import create_app  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no chromium or chromedriver on PATH: apt-get install chromium chromium-driver"
           " (.ci/run does)")
XSS = dashboard_data.XSS
SHOTS = os.environ.get("PYSCHED_WEB_SCREENSHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                 "--disable-background-networking", "--disable-component-update"):
        options.add_argument(flag)
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium fetch a driver
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


class Served:
    """uvicorn serving a dashboard over a filled store on a free loopback port."""

    def __init__(self, target: str, table: str, **options: Any) -> None:
        self.store = durable.open_store(target, table=table)
        dashboard_data.fill(self.store)
        self.app = create_app(target, table=table, **options)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]},
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)

    def row(self, task_id: str) -> dict[str, Any]:
        row = self.store.get(task_id)
        assert row is not None
        return row

    def series_state(self, series_id: str) -> str:
        return {r.series_id: r.state for r in self.store.series_table().rows()}.get(
            series_id, "cancelled")

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    if request.param == "sqlite":
        s = Served(str(tmp_path / "s.db"), "pysched_tasks")
        yield s
        s.close()
        return
    url = postgres_url()
    table = unique_table()
    s = Served(url, table)
    yield s
    s.close()
    dashboard_data.drop_postgres(url, table)


def no_alert(browser: Any) -> bool:
    try:
        alert = browser.switch_to.alert
    except NoAlertPresentException:
        return True
    return alert is None


def click_action(browser: Any, action: str, row_text: str | None = None) -> None:
    """Click the button of ``action`` (in the row holding ``row_text``, if given)."""
    scope = browser
    if row_text is not None:
        scope = browser.find_element(By.XPATH, f"//tr[td[contains(., '{row_text}')]]")
    submit(browser, scope.find_element(By.CSS_SELECTOR, f"button[data-action='{action}']"))


def submit(browser: Any, button: Any) -> None:
    """Click ``button`` and wait for the page its form leads to (the POST and its redirect
    are over by then, so the store shows what the action wrote)."""
    page = browser.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(browser, 30).until(lambda _: left(page))


def left(page: Any) -> bool:
    """Whether the browser has left the document that ``page`` belongs to. Mid-way,
    chromedriver may say "does not belong to the document" instead of "stale"."""
    try:
        page.is_enabled()
    except WebDriverException:  # StaleElementReferenceException is one
        return True
    return False


def test_every_page_loads(browser: Any, served: Served) -> None:
    pages = [("/", "Overview", "Tasks by state"), ("/tasks", "Tasks", "later-0"),
             ("/tasks?state=pending&queue=reports", "Tasks", "later-1"),
             ("/failed", "Failed", "failed-1"), ("/series", "Series", "every-minute"),
             ("/task?id=failed-1", "Task failed-1", "Traceback"),
             ("/series/one?id=every-minute", "Series every-minute", "Next fire times"),
             ("/task?id=far-future", "Task far-future", "1e+300 s (no date)")]
    for path, title, text in pages:
        browser.get(served.base + path)
        assert browser.title == f"{title} · pysched"
        assert text in browser.find_element(By.TAG_NAME, "main").text, path
        # The style sheet came from the dashboard itself and applied.
        header = browser.find_element(By.TAG_NAME, "header")
        assert header.value_of_css_property("display") == "flex"
        if SHOTS:
            name = {"/": "overview", "/tasks": "tasks", "/failed": "failed",
                    "/series": "series", "/task?id=failed-1": "task",
                    "/series/one?id=every-minute": "series-detail"}.get(path)
            if name is not None:  # the whole page, up to 1,600 pixels tall
                height = browser.execute_script("return document.documentElement.scrollHeight")
                browser.set_window_size(1280, min(int(height) + 140, 1600))
                browser.save_screenshot(str(Path(SHOTS) / f"dashboard-{name}.png"))
                browser.set_window_size(1280, 900)
    browser.get(served.base + "/task?id=nobody")
    assert browser.title == "Not found · pysched"


def test_each_action_changes_the_store(browser: Any, served: Served) -> None:
    browser.get(served.base + "/failed")
    click_action(browser, "cancel", "retrying-1")
    assert "Cancelled." in browser.find_element(By.CLASS_NAME, "done").text
    assert served.row("retrying-1")["state"] == "cancelled"
    click_action(browser, "retry", "failed-1")
    assert served.row("failed-1")["state"] == "pending"
    browser.get(served.base + "/tasks?state=pending")
    click_action(browser, "cancel", "cancel-me")
    assert served.row("cancel-me")["state"] == "cancelled"
    browser.get(served.base + "/series/one?id=nightly")
    browser.find_element(By.NAME, "note").send_keys("moving the <database>")
    click_action(browser, "pause")
    assert served.series_state("nightly") == "paused"
    assert "moving the <database>" in browser.find_element(By.CLASS_NAME, "note").text
    click_action(browser, "resume")
    assert served.series_state("nightly") == "active"
    click_action(browser, "trigger")
    assert browser.title.startswith("Task nightly@")
    assert any(r.task_id.startswith("nightly@") for r in served.store.rows())
    browser.get(served.base + "/series/one?id=nightly")
    click_action(browser, "cancel")
    assert served.series_state("nightly") == "cancelled"


def test_a_hostile_task_id_renders_as_text(browser: Any, served: Served) -> None:
    browser.get(served.base + "/failed")
    assert no_alert(browser)
    link = browser.find_element(By.XPATH, "//td[@class='id']/a[contains(., 'alert(1)')]")
    assert link.text == XSS
    link.click()
    assert no_alert(browser)
    assert browser.find_element(By.CSS_SELECTOR, "h1 code").text == XSS
    assert f"RuntimeError: {XSS}" in browser.find_element(By.CLASS_NAME, "traceback").text
    # No element of the page is a script: the id became text, nothing more.
    assert browser.find_elements(By.TAG_NAME, "script") == []
    browser.get(served.base + "/series")
    assert no_alert(browser) and f"s-{XSS}" in browser.find_element(By.TAG_NAME, "main").text


def test_a_post_without_the_csrf_token_is_refused(browser: Any, served: Served) -> None:
    # Another site (another origin on this machine) posts a form at the dashboard.
    target = f"{served.base}/actions/cancel"
    page = (f'<form method="post" action="{target}"><input name="id" value="cancel-me">'
            '<button id="go" type="submit">go</button></form>').encode()

    class Evil(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's protocol
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    evil = HTTPServer(("127.0.0.1", 0), Evil)
    thread = threading.Thread(target=evil.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(served.base + "/tasks")  # the browser holds the dashboard's cookie
        browser.get(f"http://127.0.0.1:{evil.server_address[1]}/")
        submit(browser, browser.find_element(By.ID, "go"))
        assert "Refused" in browser.title
        assert served.row("cancel-me")["state"] == "pending"
    finally:
        evil.shutdown()
        thread.join(10)
        evil.server_close()
    # The dashboard's own form, its CSRF field taken out: refused too.
    browser.get(served.base + "/tasks?state=pending")
    form = browser.find_element(By.XPATH, "//tr[td[contains(., 'cancel-me')]]//form")
    browser.execute_script("arguments[0].querySelector('input[name=csrf]').remove()", form)
    submit(browser, form.find_element(By.TAG_NAME, "button"))
    assert "Refused" in browser.title and "CSRF" in browser.find_element(By.TAG_NAME,
                                                                          "main").text
    assert served.row("cancel-me")["state"] == "pending"
