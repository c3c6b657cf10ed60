"""Shared pieces of the durable tests: registered tasks, store helpers, the PostgreSQL gate.

Tasks here are registered by name in the default registry, so a scheduler
in a test, and a worker process that imports this module, can run them.

PostgreSQL: tests use the server at PYSCHED_TEST_POSTGRES_URL if it is set,
else a private one that each test process starts on first use where
PostgreSQL is installed (support.postgres_server). Without a reachable server
they skip, except where PYSCHED_REQUIRE_POSTGRES=1 says there must be one
(.ci/run and the tests workflow set it), where they fail: such a run must not
pass by skipping them. CI=true alone does not require one: cibuildwheel and
GitHub set it where no server runs.
"""

from __future__ import annotations

import os
import subprocess  # hostile references in tests reach os through it, too
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import pysched
from pysched import durable
from pysched.durable import current_task

from support import postgres_server

# What the in-process tasks did, in order: (task_id or name, args...).
CALLS: list[tuple[Any, ...]] = []
_calls_lock = threading.Lock()
# Events that tasks wait on or set, by name (JSON args can carry a name, not an Event).
EVENTS: dict[str, threading.Event] = {}


def event(name: str) -> threading.Event:
    return EVENTS.setdefault(name, threading.Event())


@durable.task(name="note")
def note(*args: Any) -> Any:
    running = current_task()
    assert running is not None
    with _calls_lock:
        CALLS.append((running.task_id, *args))
    return args[0] if args else None


@durable.task(name="fail")
def fail(message: str) -> None:
    raise ValueError(message)


@durable.task(name="hold")
def hold(started: str, release: str, tag: Any = None) -> bool:
    """Set ``started``, wait for ``release``; returns whether cancel reached it meanwhile."""
    running = current_task()
    assert running is not None
    with _calls_lock:
        CALLS.append((running.task_id, "start", tag))
    event(started).set()
    assert event(release).wait(30), "the test never released this task"
    with _calls_lock:
        CALLS.append((running.task_id, "end", tag))
    return running.cancel_requested


@durable.task(name="wait-token")
def wait_token(started: str) -> str | None:
    """Set ``started``, then wait on the pool's cancel token; return its reason."""
    token = pysched.current_token()
    event(started).set()
    assert token.wait(30), "the token was never set"
    return token.reason


# The scheduler a close-self task closes, by the key it is given.
SCHEDULERS: dict[str, Any] = {}


@durable.task(name="close-self")
def close_self(key: str) -> str:
    assert current_task() is not None
    SCHEDULERS[key].close()  # from inside its own task: must not wait for itself
    return key


def module_level_function(x: int) -> int:
    """Not registered: reachable only as ``support.durable:module_level_function``."""
    return x * 2


# Names that a getattr chain from this module reaches, none of them defined here:
# a hostile row may name them, and none may run.
alias_of_module_level_function = module_level_function
lambda_here = lambda x: x  # noqa: E731 - a lambda bound to a module-level name


class Holder:
    """A class here: naming it would instantiate it; its method is defined here."""

    def method(self) -> None:
        pass


def reset() -> None:
    with _calls_lock:
        CALLS.clear()
    EVENTS.clear()


def wait_for(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` (a hang guard, not a speed check)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def postgres_url() -> str:
    """The test server's URL: PYSCHED_TEST_POSTGRES_URL, else this process's private server
    (started on first use where PostgreSQL is installed). Skip if there is none or it is
    down, fail instead if PYSCHED_REQUIRE_POSTGRES=1."""
    url = os.environ.get("PYSCHED_TEST_POSTGRES_URL")
    reason = None
    try:
        import psycopg
    except ImportError:
        reason = "psycopg is not installed (pip install -e '.[test]')"
    else:
        if not url:
            try:
                url = postgres_server.url()
            except postgres_server.Unavailable as exc:
                reason = str(exc)
        if url:
            try:
                psycopg.connect(url, connect_timeout=5).close()
            except psycopg.Error as exc:
                reason = f"the server at {url} is unreachable: {exc}"
    if reason is not None:
        if os.environ.get("PYSCHED_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PYSCHED_REQUIRE_POSTGRES=1 needs PostgreSQL: {reason}", pytrace=False)
        pytest.skip(postgres_server.SKIP_PREFIX + reason)
    assert url is not None
    return url


def restart_postgres(url: str) -> None:
    """Restart the test server: the command in PYSCHED_TEST_POSTGRES_RESTART, or the private
    server's own; else end every other session on it, which is what its clients see of a
    restart."""
    command = os.environ.get("PYSCHED_TEST_POSTGRES_RESTART")
    if not command and not os.environ.get("PYSCHED_TEST_POSTGRES_URL"):
        command = postgres_server.restart_command()
    if command:
        subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                   " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'")


def unique_table() -> str:
    return "t_" + uuid.uuid4().hex[:16]


def drop_postgres_table(url: str, table: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"DROP TABLE IF EXISTS {table}, {table}_meta, {table}_series, {table}_fires,"
                   f" {table}_workers, {table}_series_notes")
        db.execute(f"DROP SEQUENCE IF EXISTS {table}_seq")


# The role a worker connects as where a test terminates its sessions (the pg fixture).
ROLE = "pysched_test_worker"


def terminate_worker_sessions(admin: Any) -> int:
    # With a timeout, pg_terminate_backend returns once the sessions have ended.
    rows = admin.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                         " WHERE usename = %s", (ROLE,)).fetchall()
    return len(rows)


def schedulers(store_spec: dict[str, Any]) -> Iterator[Any]:
    """The body of a ``make`` fixture: ``make(**options)`` makes a scheduler on a new store
    object over the test's data; each is closed (and checked closed) afterwards."""
    reset()
    made: list[durable.DurableScheduler] = []

    def factory(**options: Any) -> durable.DurableScheduler:
        options.setdefault("poll_interval", 0.05)
        store = open_spec(store_spec)
        sched = durable.DurableScheduler(store, **options)
        made.append(sched)
        return sched

    yield factory
    for sched in made:
        sched.close(timeout=30)
        assert sched.closed
        if store_spec["kind"] != "memory":
            sched.store.close()


def open_spec(spec: dict[str, Any]) -> durable.Store:
    """A (new) store object on the spec's data."""
    if spec["kind"] == "memory":
        return spec["store"]  # type: ignore[no-any-return]
    return durable.open_store(spec["target"], table=spec["table"])


def put_raw(store: durable.Store, spec: dict[str, Any], **fields: Any) -> None:
    """Write a row as a corrupt or hostile database would hold it, bypassing all checks."""
    row = {"version": 1, "state": "pending", "run_at": 0.0, "priority": 0, "ref": "note",
           "args": '{"args":[],"kwargs":{}}', "attempts": 0, "seq": 0, "fmt": 1, **fields}
    if spec["kind"] == "memory":
        store._put_raw(**row)  # type: ignore[attr-defined]
        return
    cols = ", ".join(row)
    if spec["kind"] == "sqlite":
        db = store._conns.get()  # type: ignore[attr-defined]
        db.execute(f"INSERT INTO {spec['table']} ({cols}) VALUES ({', '.join('?' * len(row))})",
                   tuple(row.values()))
    else:
        store._conns.get().execute(  # type: ignore[attr-defined]
            f"INSERT INTO {spec['table']} ({cols}) VALUES ({', '.join(['%s'] * len(row))})",
            tuple(row.values()))


def outcome(claim: durable.Claim, state: str = "completed") -> durable.Outcome:
    return durable.Outcome(claim.token, claim.task_id, claim.version, state, None)
