"""The dashboard's app through Starlette's TestClient, on SQLite and PostgreSQL: its pages,
its actions and what guards them (CSRF, read-only, the token, hosts, the bind rule)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import dashboard_data
from support.durable import postgres_url, unique_table

pytest.importorskip("starlette", reason="the dashboard needs the web extra")
pytest.importorskip("jinja2", reason="the dashboard needs the web extra")

from starlette.applications import Starlette  # noqa: E402
from starlette.routing import Mount  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from pysched import durable  # noqa: E402
from pysched.cli import main  # noqa: E402
from pysched.web import create_app  # noqa: E402
from pysched.web.security import LOOPBACK_HOSTS  # noqa: E402

XSS = dashboard_data.XSS
TOKEN = "correct-horse-battery-staple"


class Site:
    """A filled store and how to make dashboards over it."""

    def __init__(self, kind: str, target: str, table: str) -> None:
        self.kind, self.target, self.table = kind, target, table
        self.store = durable.open_store(target, table=table)
        dashboard_data.fill(self.store)
        dashboard_data.put_bad_series(self.store)
        self.apps: list[Starlette] = []

    def app(self, **options: Any) -> Starlette:
        """A dashboard over the store, closed when the test ends."""
        app = create_app(self.target, table=self.table, **options)
        self.apps.append(app)
        return app

    def client(self, **options: Any) -> TestClient:
        return TestClient(self.app(**options), base_url="http://127.0.0.1",
                          follow_redirects=False)

    def close(self) -> None:
        for app in self.apps:
            app.state.dashboard.close()
        self.store.close()

    def row(self, task_id: str) -> dict[str, Any]:
        row = self.store.get(task_id)
        assert row is not None
        return row

    def series_state(self, series_id: str) -> str:
        return {r.series_id: r.state for r in self.store.series_table().rows()}.get(
            series_id, "cancelled")


@pytest.fixture(params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    if request.param == "sqlite":
        s = Site("sqlite", str(tmp_path / "s.db"), "pysched_tasks")
        yield s
        s.close()
        return
    url = postgres_url()
    s = Site("postgres", url, unique_table())
    yield s
    s.close()
    dashboard_data.drop_postgres(url, s.table)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)


def post(client: TestClient, action: str, page: str, prefix: str = "", **form: str) -> Any:
    """POST ``action`` from the form of ``page``, as a browser would (the dashboard mounted
    at ``prefix``)."""
    html = client.get(page).text
    assert f'action="{prefix}/actions/{action}"' in html or action == "cancel"
    return client.post(f"{prefix}/actions/{action}",
                       data={"csrf": csrf_of(html), "back": page, **form})


PAGES = ["/", "/tasks", "/tasks?state=pending&queue=reports&order=newest", "/tasks?name=cleanup",
         "/failed", "/series", "/task?id=failed-1", "/task?id=running-1",
         "/series/one?id=every-minute", "/series/one?id=broken", "/task?id=far-future"]


def test_every_page_loads_and_escapes_what_rows_hold(site: Site) -> None:
    client = site.client()
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 200, (page, response.text)
        assert "<script" not in response.text and "<b>" not in response.text, page
        assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/failed").text
    detail = client.get("/task", params={"id": XSS}).text
    assert "RuntimeError: &lt;script&gt;alert(1)&lt;/script&gt;" in detail
    assert "ValueError: &lt;b&gt;bad&lt;/b&gt; input" in client.get("/task?id=failed-1").text
    assert "1e+300 s (no date)" in client.get("/task?id=far-future").text
    assert "neither" in client.get("/series/one?id=broken").text
    overview = client.get("/").text
    assert "worker-a" in overview and "reports" in overview and "every-minute" in overview
    assert client.get("/task?id=nobody").status_code == 404
    assert client.get("/tasks?after=bogus").status_code == 400
    assert client.get("/tasks?queue=a%00b").status_code == 400
    assert client.get("/task").status_code == 400
    assert client.get("/series/one?id=nobody").status_code == 404
    assert client.get("/static/style.css").status_code == 200


def test_pages_follow_the_cursor_to_the_last_row(site: Site) -> None:
    client = site.client()
    seen: list[str] = []
    page = "/tasks?state=pending"
    for _ in range(50):
        html = client.get(page).text
        seen += re.findall(r'<td class="id"><a href="/task\?id=([^"]+)"', html)
        more = re.search(r'rel="next" href="([^"]+)"', html)
        if more is None:
            break
        page = more.group(1).replace("&amp;", "&")
    pending = [r.task_id for r in site.store.rows()]
    assert len(seen) == len(pending) == len(set(seen))


def test_each_action_changes_the_store(site: Site) -> None:
    client = site.client()
    response = post(client, "cancel", "/failed", id="retrying-1")
    assert response.status_code == 303 and response.headers["location"] == "/failed?done=cancelled"
    assert site.row("retrying-1")["state"] == "cancelled"
    assert "Cancelled." in client.get(response.headers["location"]).text
    assert post(client, "retry", "/failed", id="failed-1").status_code == 303
    assert site.row("failed-1")["state"] == "pending"
    response = post(client, "retry", "/failed", id="failed-1")  # pending now: nothing to do
    assert response.headers["location"].endswith("done=unchanged")
    page = "/series/one?id=nightly"
    assert post(client, "pause", page, id="nightly", note="moving <the> database").status_code \
        == 303
    assert site.series_state("nightly") == "paused"
    assert "moving &lt;the&gt; database" in client.get(page).text
    assert post(client, "resume", page, id="nightly").status_code == 303
    assert site.series_state("nightly") == "active"
    response = post(client, "trigger", page, id="nightly")
    location = response.headers["location"]
    assert location.startswith("/task?id=nightly%40") and location.endswith("done=triggered")
    assert "One run of the series" in client.get(location).text
    assert post(client, "cancel", page, id="nightly").status_code == 303
    assert site.series_state("nightly") == "cancelled"
    # Where an action returns is a page of this app, never another site.
    response = client.post("/actions/cancel", data={
        "csrf": csrf_of(client.get("/tasks").text), "id": "later-0",
        "back": "https://evil.test/"})
    assert response.headers["location"] == "/?done=cancelled"


def test_a_post_without_this_browsers_csrf_token_changes_nothing(site: Site) -> None:
    client = site.client()
    token = csrf_of(client.get("/tasks").text)
    other = site.client()
    other_token = csrf_of(other.get("/tasks").text)
    refused = [
        client.post("/actions/cancel", data={"id": "cancel-me"}),
        client.post("/actions/cancel", data={"id": "cancel-me", "csrf": ""}),
        client.post("/actions/cancel", data={"id": "cancel-me", "csrf": other_token}),
        client.post("/actions/cancel", data={"id": "cancel-me", "csrf": token},
                    headers={"origin": "http://evil.test"}),
        client.post("/actions/cancel", data={"id": "cancel-me", "csrf": token},
                    headers={"sec-fetch-site": "cross-site"}),
        site.client().post("/actions/cancel", data={"id": "cancel-me", "csrf": token}),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert "CSRF" in refused[0].text
    assert site.row("cancel-me")["state"] == "pending"
    ok = client.post("/actions/cancel", data={"id": "cancel-me", "csrf": token},
                     headers={"origin": "http://127.0.0.1"})
    assert ok.status_code == 303 and site.row("cancel-me")["state"] == "cancelled"


def test_read_only_shows_no_actions_and_refuses_them(site: Site) -> None:
    client = site.client(read_only=True)
    for page in PAGES:
        html = client.get(page).text
        assert 'method="post"' not in html and "read-only" in html
    token = csrf_of(site.client().get("/tasks").text)  # any token: refused before it is looked at
    response = client.post("/actions/cancel", data={"id": "cancel-me", "csrf": token})
    assert response.status_code == 403 and "read-only" in response.text
    assert site.row("cancel-me")["state"] == "pending"


def test_a_token_guards_every_page_and_action(site: Site) -> None:
    client = site.client(token=TOKEN)
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 303 and response.headers["location"] == "/login"
    response = client.post("/actions/cancel", data={"id": "cancel-me"})
    assert response.status_code == 403 and site.row("cancel-me")["state"] == "pending"
    login = client.get("/login").text
    wrong = client.post("/login", data={"csrf": csrf_of(login), "token": TOKEN[:-1]})
    assert wrong.status_code == 403 and "not the token" in wrong.text
    assert client.get("/").status_code == 303
    right = client.post("/login", data={"csrf": csrf_of(login), "token": TOKEN})
    assert right.status_code == 303
    assert client.get("/").status_code == 200
    assert post(client, "cancel", "/tasks", id="cancel-me").status_code == 303
    assert site.row("cancel-me")["state"] == "cancelled"
    script = site.client(token=TOKEN)
    assert script.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert script.get("/", headers={"authorization": "Bearer nope"}).status_code == 303


def test_short_tokens_and_other_hosts_are_refused(site: Site) -> None:
    with pytest.raises(ValueError, match="at least 16"):
        create_app(site.target, table=site.table, token="short")
    client = TestClient(site.app(allowed_hosts=list(LOOPBACK_HOSTS)),
                        base_url="http://127.0.0.1")
    assert client.get("/").status_code == 200
    assert client.get("/", headers={"host": "localhost:8321"}).status_code == 200
    # A name rebound to 127.0.0.1 by another site's DNS is not served.
    assert client.get("/", headers={"host": "rebound.evil.test"}).status_code == 400


def test_it_mounts_inside_another_app(site: Site) -> None:
    dashboard = site.app()
    outer = Starlette(routes=[Mount("/ops/schedule", dashboard)])
    client = TestClient(outer, base_url="http://127.0.0.1", follow_redirects=False)
    html = client.get("/ops/schedule/").text
    assert 'href="/ops/schedule/tasks"' in html and 'href="/ops/schedule/static/style.css"' in html
    assert client.get("/ops/schedule/static/style.css").status_code == 200
    response = post(client, "cancel", "/ops/schedule/failed", "/ops/schedule", id="retrying-1")
    assert response.headers["location"] == "/ops/schedule/failed?done=cancelled"
    assert site.row("retrying-1")["state"] == "cancelled"


def test_it_takes_a_store_object_and_leaves_it_open(site: Site) -> None:
    app = create_app(site.store)
    client = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False)
    assert client.get("/task?id=failed-1").status_code == 200
    assert post(client, "retry", "/failed", id="failed-1").status_code == 303
    app.state.dashboard.close()
    assert site.row("failed-1")["state"] == "pending"  # the caller's store still works
    with pytest.raises(TypeError, match="SQLite and PostgreSQL"):
        create_app(durable.MemoryStore())


def test_a_store_that_cannot_be_read_is_a_page_not_a_crash(tmp_path: Path) -> None:
    durable.open_store(str(tmp_path / "s.db")).close()
    for target, table, expected in ((str(tmp_path / "s.db"), "absent", "no table absent"),
                                    ("postgresql://nobody@127.0.0.1:1/none", "pysched_tasks",
                                     "cannot read the store")):
        with TestClient(create_app(target, table=table)) as client:  # runs its lifespan
            response = client.get("/tasks")
            assert response.status_code == 503 and expected in response.text


def test_the_command_refuses_a_bind_beyond_loopback_without_a_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "s.db")
    durable.open_store(path).close()
    for argv in (["--host", "0.0.0.0"], ["--host", "192.0.2.1"], ["--host", "::"],
                 ["--host", "0.0.0.0", "--token", "short"], ["--port", "70000"]):
        with pytest.raises(SystemExit) as exit_:
            main(["web", "--store", path, *argv])
        assert exit_.value.code == 2
    assert "give --token too" in capsys.readouterr().err
    from pysched.cli import web

    args = type("Args", (), {"store": path, "table": "pysched_tasks", "host": "0.0.0.0",
                             "port": 0, "read_only": False, "token": TOKEN})()
    app = web.build(args)
    assert app.state.dashboard.table == "pysched_tasks"
    app.state.dashboard.close()


def test_the_command_serves_the_dashboard_until_interrupted(site: Site) -> None:
    """``pysched web`` in a process of its own: it serves the pages on the port it was
    given, and SIGINT stops it with status 0."""
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "pysched", "web", "--store", site.target,
                               "--table", site.table, "--port", str(port), "--read-only"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/failed",
                                            timeout=10) as response:
                    page = response.read().decode()
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "pysched web did not start"
                time.sleep(0.1)
        assert "failed-1" in page and "read-only" in page and 'method="post"' not in page
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 0
        server.stdout.close()  # type: ignore[union-attr]
