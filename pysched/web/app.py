"""The dashboard's ASGI app: pages that read the store, POSTs that steer it.

``create_app`` builds a Starlette app over one store; serve it with
uvicorn (``pysched web``) or mount it in an app of your own. Pages read
through ``Listing`` on read-only connections, in worker threads (the reads
block); actions go through ``Steering`` on a store opened at the first one.
Every value from the store reaches HTML through Jinja2's autoescaping.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..durable import moments
from ..durable.errors import BadRow
from ..durable.listing import Listing
from ..durable.reading import Database, connect
from ..durable.steering import Done, Steering
from ..durable.store import Store, check_key
from ..durable.stores import open_store
from .security import AUTH_COOKIE, CSRF_COOKIE, CSRF_FIELD, Guard, SecurityHeaders

__all__ = ["Dashboard", "create_app"]

HERE = Path(__file__).parent
T = TypeVar("T")
# What an action's redirect may say: fixed text, never text from the request.
DONE = {"cancelled": "Cancelled.", "retried": "Retried: a new version is due now.",
        "paused": "Paused.", "resumed": "Resumed.",
        "triggered": "One run of the series was scheduled now, as this task.",
        "unchanged": "Nothing changed: the row was not in a state for that action"
                     " (it may have changed meanwhile)."}
MAX_FORM = 16_384  # bytes: an id, a note and a token fit many times over
STATE_CHOICES = ("pending", "running", "completed", "failed", "cancelled", "error")


class Dashboard:
    """One store as the dashboard sees it: reads at once, the store for actions on demand."""

    def __init__(self, target: str, table: str, *, read_only: bool,
                 store: Store | None = None) -> None:
        self.target = target
        self.table = table
        self.read_only = read_only
        self.db: Database = connect(target)
        self.listing = Listing(self.db, table)
        self._given = store  # the caller's: never closed here
        self._opened: list[Store | Database] = []  # opened here for actions: closed here
        self._steering: Steering | None = None
        self._lock = threading.Lock()

    def steering(self) -> Steering:
        """The actions, on a store opened at the first call."""
        with self._lock:
            if self._steering is None:
                writer = connect(self.target, writable=True)
                self._opened.append(writer)
                store = self._given
                if store is None:
                    store = open_store(self.target, table=self.table)
                    self._opened.append(store)
                self._steering = Steering(store, writer, Listing(writer, self.table))
            return self._steering

    def close(self) -> None:
        """Close the connections this dashboard opened (not a store it was given)."""
        self.db.close()
        with self._lock:
            opened, self._opened, self._steering = self._opened, [], None
        for resource in opened:
            resource.close()


def create_app(store: str | os.PathLike[str] | Store, *, table: str = "pysched_tasks",
               read_only: bool = False, token: str | None = None,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """The dashboard over ``store``: a ``postgresql://`` URL, a SQLite path, or a
    ``SQLiteStore`` / ``PostgresStore`` (its own table is used then).

    ``read_only``: no actions (their forms are not shown and their POSTs are
    refused). ``token``: every page asks for it first (at least 16
    characters). ``allowed_hosts``: the ``Host`` names served (None: any, for an
    app mounted in yours, which checks its own). Mount it anywhere: links
    follow the mount's path. ``app.state.dashboard.close()`` closes its
    connections (the app's lifespan does when it is served on its own).
    """
    guard = Guard(token)  # checks the token before anything is opened
    target, table, given = _target_of(store, table)
    dashboard = Dashboard(target, table, read_only=read_only, store=given)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters.update(when=moments.when, wall=moments.wall_text, relative=moments.relative,
                       span=moments.span, lease=moments.lease_text, iso=moments.iso_utc)
    pages = _Pages(dashboard, guard, env)
    routes = [
        Route("/", pages.overview, name="overview"),
        Route("/tasks", pages.tasks, name="tasks"),
        Route("/task", pages.task, name="task"),
        Route("/failed", pages.failed, name="failed"),
        Route("/series", pages.series_list, name="series_list"),
        Route("/series/one", pages.series_one, name="series_one"),
        Route("/login", pages.login, methods=["GET", "POST"], name="login"),
        Route("/actions/{action}", pages.action, methods=["POST"], name="action"),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    app = Starlette(routes=routes, middleware=middleware, lifespan=_lifespan(dashboard))
    app.state.dashboard = dashboard
    return app


def _lifespan(dashboard: Dashboard) -> Any:
    """Close the dashboard's connections when the server stops (not run when mounted)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        yield
        dashboard.close()

    return lifespan


def _target_of(store: Any, table: str) -> tuple[str, str, Store | None]:
    """(target, table, the store object if one was given) for what ``create_app`` took."""
    if isinstance(store, Store):
        location = getattr(store, "url", None) or getattr(store, "path", None)
        if not isinstance(location, str):
            raise TypeError(f"store: the dashboard reads SQLite and PostgreSQL stores, not"
                            f" {type(store).__name__}")
        return location, store.table, store  # type: ignore[attr-defined]
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        raise TypeError(f"store must be a URL, a path or a Store, not {type(store).__name__}")
    return store, table, None


class _NotFound(Exception):
    """No row for the page (404), or its page is elsewhere (``moved_to``: 303 there)."""

    def __init__(self, message: str, moved_to: str | None = None) -> None:
        super().__init__(message)
        self.moved_to = moved_to


class _Pages:
    """The endpoints; each reads in a worker thread and renders one template."""

    def __init__(self, dashboard: Dashboard, guard: Guard, env: jinja2.Environment) -> None:
        self.d = dashboard
        self.guard = guard
        self.env = env

    # -- rendering ---------------------------------------------------------------------------

    def render(self, request: Request, template: str, status: int = 200,
               **context: Any) -> Response:
        key, new = self.guard.browser_key(request)
        html = self.env.get_template(template).render(
            request=request, url=partial(_url, request),
            here=_here(request),
            csrf_field=CSRF_FIELD, csrf=self.guard.form_token(key),
            read_only=self.d.read_only, table=self.d.table, done=DONE.get(
                request.query_params.get("done", "")), **context)
        response = HTMLResponse(html, status_code=status)
        if new:
            response.set_cookie(CSRF_COOKIE, key, httponly=True, samesite="strict",
                                path=_cookie_path(request),
                                secure=request.url.scheme == "https")
        return response

    def problem(self, request: Request, status: int, message: str) -> Response:
        return self.render(request, "problem.html", status, message=message,
                           status_text=_STATUS_TEXT.get(status, "Problem"))

    async def read(self, request: Request, work: Callable[[], T]) -> T | Response:
        """``work()`` in a worker thread; a store that cannot be read is a 503 page."""
        try:
            return await run_in_threadpool(work)
        except _NotFound as exc:
            if exc.moved_to is not None:
                return RedirectResponse(exc.moved_to, status_code=303)
            return self.problem(request, 404, str(exc))
        except ValueError as exc:  # a bad cursor or filter, named
            return self.problem(request, 400, str(exc))
        except LookupError as exc:
            return self.problem(request, 503, f"{exc.args[0] if exc.args else exc}")
        except Exception as exc:  # noqa: BLE001 - shown as one line
            return self.problem(request, 503, f"cannot read the store: {_first(exc)}")

    def admitted(self, request: Request) -> Response | None:
        """None if ``request`` may see the dashboard, else the way to the login form."""
        if self.guard.admitted(request):
            return None
        return RedirectResponse(_url(request, "login"), status_code=303)

    # -- pages -------------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        return await self.page(request, "overview.html", lambda: {
            "overview": self.d.listing.overview(),
            "series": self.d.listing.series(limit=10)[0]})

    async def tasks(self, request: Request) -> Response:
        q = request.query_params
        try:
            state = _optional(q.get("state"), "state")
            queue = _optional(q.get("queue"), "queue")
            name = _optional(q.get("name"), "name")
        except ValueError as exc:
            return self.problem(request, 400, str(exc))
        newest = q.get("order") == "newest"
        filters = {"state": state or "", "queue": queue or "", "name": name or "",
                   "order": "newest" if newest else ""}
        return await self.page(request, "tasks.html", lambda: {
            "page": self.d.listing.tasks(states=[state] if state else [], queue=queue,
                                         name=name, after=q.get("after") or None,
                                         newest_first=newest),
            "filters": filters, "states": _state_choices(state)})

    async def failed(self, request: Request) -> Response:
        after = request.query_params.get("after") or None
        retrying = request.query_params.get("retrying") or None
        return await self.page(request, "failed.html", lambda: {
            "page": self.d.listing.failed(after=after),
            "retrying": self.d.listing.retrying(after=retrying)})

    async def task(self, request: Request) -> Response:
        task_id = request.query_params.get("id")

        def work() -> dict[str, Any]:
            if task_id is None:
                raise ValueError("id: which task? (/task?id=...)")
            task = self.d.listing.task(task_id)
            series = self.d.listing.one_series(task_id, fires=0)
            if task is None:  # a series' id: its page
                raise _NotFound(f"no task {task_id!r}", None if series is None else
                                _url(request, "series_one", id=task_id))
            return {"task": task, "series": series}

        return await self.page(request, "task.html", work)

    async def series_list(self, request: Request) -> Response:
        after = request.query_params.get("after", "")
        return await self.page(request, "series_list.html", lambda: dict(zip(
            ("series", "next"), self.d.listing.series(after=after, cancelled=True),
            strict=True), now=self.d.db.now()))

    async def series_one(self, request: Request) -> Response:
        series_id = request.query_params.get("id")

        def work() -> dict[str, Any]:
            if series_id is None:
                raise ValueError("id: which series? (/series/one?id=...)")
            detail = self.d.listing.one_series(series_id)
            if detail is None:
                raise _NotFound(f"no series {series_id!r}")
            return {"detail": detail}

        return await self.page(request, "series.html", work)

    async def page(self, request: Request, template: str,
                   work: Callable[[], dict[str, Any]]) -> Response:
        refused = self.admitted(request)
        if refused is not None:
            return refused
        context = await self.read(request, work)
        if isinstance(context, Response):
            return context
        return self.render(request, template, **context)

    # -- login and actions -------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        if self.guard.token is None:
            return RedirectResponse(_url(request, "overview"), status_code=303)
        if request.method == "GET":
            return self.render(request, "login.html", failed=False)
        form = await _form(request)
        if not self.guard.post_allowed(request, form.get(CSRF_FIELD)):
            return self.problem(request, 403, "refused: the form's CSRF token is missing or"
                                              " not this browser's (reload the page)")
        if not self.guard.token_matches(form.get("token")):
            return self.render(request, "login.html", 403, failed=True)
        response = RedirectResponse(_url(request, "overview"), status_code=303)
        response.set_cookie(AUTH_COOKIE, self.guard.auth_cookie(), httponly=True,
                            samesite="strict", path=_cookie_path(request),
                            secure=request.url.scheme == "https")
        return response

    async def action(self, request: Request) -> Response:
        refused = self.admitted(request)
        if refused is not None:
            return self.problem(request, 403, "refused: give the token first")
        if self.d.read_only:
            return self.problem(request, 403, "refused: this dashboard is read-only")
        form = await _form(request)
        if not self.guard.post_allowed(request, form.get(CSRF_FIELD)):
            return self.problem(request, 403, "refused: the form's CSRF token is missing or"
                                              " not this browser's (reload the page)")
        name = request.path_params["action"]
        target = form.get("id")
        note = form.get("note") or None
        if name not in _ACTIONS or not isinstance(target, str):
            return self.problem(request, 400, "no such action, or no id")
        try:
            check_key(target, "id")
            done = await run_in_threadpool(_ACTIONS[name], self.d.steering(), target, note)
        except BadRow as exc:
            return self.problem(request, 409, f"refused: {_first(exc)}")
        except (TypeError, ValueError) as exc:
            return self.problem(request, 400, str(exc))
        except Exception as exc:  # noqa: BLE001 - shown as one line
            return self.problem(request, 503, f"cannot write the store: {_first(exc)}")
        code = _DONE_CODES[name] if done.changed else "unchanged"
        if name == "trigger" and done.task_id is not None:
            return RedirectResponse(_url(request, "task", id=done.task_id, done=code), 303)
        back = _back(request, form.get("back"))
        return RedirectResponse(_with_query(back, done=code), status_code=303)


_ACTIONS: dict[str, Callable[[Steering, str, Any], Done]] = {
    "cancel": lambda s, i, _: s.cancel(i),
    "retry": lambda s, i, _: s.retry(i),
    "pause": lambda s, i, note: s.pause(i, note),
    "resume": lambda s, i, _: s.resume(i),
    "trigger": lambda s, i, _: s.trigger(i),
}
_STATUS_TEXT = {400: "Bad request", 403: "Refused", 404: "Not found", 409: "Refused",
                503: "The store cannot be read"}
_DONE_CODES = {"cancel": "cancelled", "retry": "retried", "pause": "paused",
               "resume": "resumed", "trigger": "triggered"}


async def _form(request: Request) -> dict[str, str]:
    """The fields of a POSTed form (urlencoded, as every form here is), the first of each
    name; an empty dict for another body or one larger than ``MAX_FORM`` bytes."""
    if request.headers.get("content-type", "").split(";")[0].strip() != \
            "application/x-www-form-urlencoded":
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            return {}
    fields: dict[str, str] = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        fields.setdefault(name, value)
    return fields


def _url(request: Request, route: str, params: dict[str, str] | None = None, /,
         **query: Any) -> str:
    """The path of the route named ``route`` (under the app's mount) with its path
    ``params``, and ``query`` (empty values left out)."""
    path = urlsplit(str(request.url_for(route, **(params or {})))).path
    given = {k: v for k, v in query.items() if v not in (None, "")}
    return f"{path}?{urlencode(given)}" if given else path


def _here(request: Request) -> str:
    """This page's path and query, less an action's ``done``: where its forms come back."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "done"]
    return f"{request.url.path}?{urlencode(query)}" if query else request.url.path


def _with_query(url: str, **query: str) -> str:
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}{urlencode(query)}"


def _back(request: Request, back: Any) -> str:
    """Where an action returns: ``back`` if it is a page of this app, else the overview."""
    home = _url(request, "overview")
    if not isinstance(back, str):
        return home
    parts = urlsplit(back)
    root = home.rstrip("/") + "/"
    if parts.scheme or parts.netloc or not back.startswith(root) or back.startswith("//") \
            or "\\" in back:
        return home
    return back


def _cookie_path(request: Request) -> str:
    return _url(request, "overview")


def _optional(value: str | None, name: str) -> str | None:
    return None if not value else check_key(value, name)


def _state_choices(chosen: str | None) -> list[str]:
    known = list(STATE_CHOICES)
    if chosen and chosen not in known:  # a state this pysched does not know, asked by name
        known.append(chosen)
    return known


def _first(exc: BaseException) -> str:
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__

