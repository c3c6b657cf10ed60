"""The durable worker's life cycle: what escapes a run, clocks that fail
in the worker's threads, close() raced and repeated.

Each test orders its steps with events and a clock that fails on demand in one
named thread, never with sleeps that hope; every wait has a hang guard only.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pysched import SchedulerClosed, durable
from pysched.calendar import Every
from pysched.durable import DurableScheduler, PostgresStore, SQLiteStore

import support.durable as h
from support.durable import ROLE, terminate_worker_sessions

HANG_GUARD = 30.0


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Iterator[Callable[..., DurableScheduler]]:
    yield from h.schedulers(store_spec)


@durable.task(name="lifecycle-raise-system-exit")
def raise_system_exit() -> None:
    h.CALLS.append(("system-exit",))
    raise SystemExit(3)


@durable.task(name="lifecycle-raise-keyboard-interrupt")
def raise_keyboard_interrupt() -> None:
    h.CALLS.append(("keyboard-interrupt",))
    raise KeyboardInterrupt


SERIES_FIRES: list[float] = []
SERIES_FIRED = threading.Condition()


@durable.task(name="lifecycle-series-fire")
def series_fire() -> None:
    with SERIES_FIRED:
        SERIES_FIRES.append(time.monotonic())
        SERIES_FIRED.notify_all()


def fires_after(count: int) -> bool:
    """Wait (hang guard only) until ``count`` more series fires than now have run."""
    with SERIES_FIRED:
        goal = len(SERIES_FIRES) + count
        return SERIES_FIRED.wait_for(lambda: len(SERIES_FIRES) >= goal, HANG_GUARD)


CLOSED_FROM_A_SERIES: list[tuple[bool, bool, bool]] = []
CLOSING: list[DurableScheduler] = []  # the scheduler series_close closes


@durable.task(name="lifecycle-series-close")
def series_close() -> None:
    """A series run that closes its own scheduler three ways; none may wait for itself."""
    assert durable.current_task() is not None
    sched = CLOSING[0]
    CLOSED_FROM_A_SERIES.append((sched.close(), sched.close(timeout=HANG_GUARD),
                                 sched.close(wait=False)))
    with SERIES_FIRED:
        SERIES_FIRED.notify_all()


class FailingClock:
    """time.monotonic, except that the next reading taken in a thread whose name holds
    ``fail_in`` raises, once; ``failed`` is set when it has."""

    def __init__(self) -> None:
        self.fail_in: str | None = None
        self.failed = threading.Event()
        self._lock = threading.Lock()

    def arm(self, thread_name_part: str) -> None:
        with self._lock:
            self.failed.clear()
            self.fail_in = thread_name_part

    def __call__(self) -> float:
        with self._lock:
            fail = self.fail_in is not None and self.fail_in in threading.current_thread().name
            if fail:
                self.fail_in = None
        if fail:
            self.failed.set()
            raise OSError("the clock could not be read")
        return time.monotonic()


@pytest.mark.parametrize("task", [raise_system_exit, raise_keyboard_interrupt],
                         ids=["SystemExit", "KeyboardInterrupt"])
def test_a_base_exception_from_a_task_fails_its_version_and_its_future_raises_it(
        make: Callable[..., DurableScheduler], task: Callable[[], None]) -> None:
    """SystemExit or KeyboardInterrupt out of a task: the row is failed with that
    exception's name, the Future raises it (it used to resolve with None, as if the
    task had returned), and the worker runs what comes next."""
    s = make(max_workers=1)  # the one worker thread must survive it
    future = s.schedule("base", s.clock(), 0, task)
    expected = SystemExit if task is raise_system_exit else KeyboardInterrupt
    with pytest.raises(expected):
        future.result(HANG_GUARD)
    row = s.row("base")
    assert row is not None and row["state"] == "failed"
    assert row["error"].startswith(expected.__name__)
    assert s.schedule("after", s.clock(), 0, h.note, ["after"]).result(HANG_GUARD) == "after"
    assert s.stats()["failed"] == 1


def test_a_clock_reading_that_fails_in_the_claiming_thread_is_retried(
        make: Callable[..., DurableScheduler]) -> None:
    """One clock reading raising in the claiming thread used to end that thread: the
    scheduler still said "open" and took work, and never ran any of it again. The
    round is now logged and tried again after a backoff."""
    clock = FailingClock()
    s = make(clock=clock)
    assert s.schedule("before", s.clock(), 0, h.note, ["before"]).result(HANG_GUARD) == "before"
    clock.arm("pysched-durable-claim")
    assert clock.failed.wait(HANG_GUARD), "the claiming thread never read the clock"
    assert s.schedule("after", s.clock(), 0, h.note, ["after"]).result(HANG_GUARD) == "after"
    assert s.row("after")["state"] == "completed"


def test_a_clock_reading_that_fails_before_a_run_starts_fails_that_run_with_it(
        make: Callable[..., DurableScheduler]) -> None:
    """The start rule reads the clock in the worker thread: if that reading raises,
    the task is not called, the version is failed with the clock's error (it used to
    say "interrupted by a BaseException") and its Future raises that error (it used to
    resolve with None, as if the task had run and returned None)."""
    clock = FailingClock()
    s = make(clock=clock)
    clock.arm("pysched-durable-worker")
    future = s.schedule("unread", s.clock(), 0, h.note, ["unread"])
    with pytest.raises(OSError, match="the clock could not be read"):
        future.result(HANG_GUARD)
    assert clock.failed.is_set()
    assert ("unread", "unread") not in h.CALLS
    row = s.row("unread")
    assert row is not None and row["state"] == "failed"
    assert row["error"].startswith("OSError: the clock could not be read")
    assert s.schedule("next", s.clock(), 0, h.note, ["next"]).result(HANG_GUARD) == "next"


def test_a_clock_reading_that_fails_in_the_series_thread_is_retried(
        make: Callable[..., DurableScheduler]) -> None:
    """The series thread's own readings (when to do its chores, how long to wait) used
    to end it at the first that raised: no series fired here again while the scheduler
    said "open". The round is now logged and tried again after ``poll_interval``."""
    clock = FailingClock()
    s = make(clock=clock)
    s.schedule_recurring("every", Every(0.05), 0, series_fire)
    assert fires_after(1), "the series never fired"
    clock.arm("pysched-durable-series")
    assert clock.failed.wait(HANG_GUARD), "the series thread never read the clock"
    assert fires_after(2), "the series stopped firing after one clock reading failed"


class LogWatch(logging.Handler):
    """Counts the records of ``pysched.durable`` whose message starts with ``prefix``."""

    def __init__(self, prefix: str) -> None:
        super().__init__(logging.WARNING)
        self.prefix = prefix
        self.seen = 0
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.prefix):
            with self.changed:
                self.seen += 1
                self.changed.notify_all()

    def wait_for(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.seen >= count, HANG_GUARD)


@pytest.fixture
def outcome_failures() -> Iterator[LogWatch]:
    watch = LogWatch("storing 1 outcomes failed")
    logger = logging.getLogger("pysched.durable")
    logger.addHandler(watch)
    yield watch
    logger.removeHandler(watch)


def test_an_outcome_write_refused_by_a_locked_sqlite_file_is_stored_once_later(
        tmp_path: Any, outcome_failures: LogWatch) -> None:
    """Another process holds the file with BEGIN EXCLUSIVE for longer than the store's
    busy timeout while a run ends: its outcome write is refused, logged, kept and tried
    again with backoff; once the file is free it is stored exactly once, the Future
    resolves, and the worker goes on. (It would fail if a refused batch were dropped:
    the Future would never resolve; or stored twice: two completions counted.)"""
    h.reset()
    path = str(tmp_path / "locked.db")
    s = DurableScheduler(SQLiteStore(path, busy_timeout=0.05), poll_interval=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        future = s.schedule("held", s.clock(), 0, h.hold, ["held-started", "held-release"])
        assert h.event("held-started").wait(HANG_GUARD)
        other.execute("BEGIN EXCLUSIVE")
        h.event("held-release").set()
        assert outcome_failures.wait_for(2), "the outcome write was not refused and retried"
        assert not future.done()  # a Future resolves once its outcome is stored
        other.execute("COMMIT")
        assert future.result(HANG_GUARD) is False
        row = s.row("held")
        assert row is not None and row["state"] == "completed" and row["attempts"] == 1
        assert s.schedule("next", s.clock(), 0, h.note, ["next"]).result(HANG_GUARD) == "next"
        stats = s.stats()
        assert (stats["completed"], stats["not_recorded"], stats["handed_back"]) == (2, 0, 0)
    finally:
        other.close()
        assert s.close(timeout=HANG_GUARD)
        s.store.close()


def test_close_while_postgresql_refuses_the_worker_returns_then_finishes_once_it_is_back(
        pg: dict[str, Any]) -> None:
    """close() while the database refuses every connection, with one run in flight and
    one claim waiting for a worker: close(timeout) returns False (closing) instead of
    hanging; once the database is back, a second close() finishes: the run's outcome is
    stored once, the waiting claim is handed back unrun (pending, its attempt given
    back, no lease) and its Future fails with SchedulerClosed."""
    import psycopg  # noqa: F401 - the pg fixture needs it

    s = DurableScheduler(PostgresStore(pg["worker_url"], table=pg["table"]), max_workers=1,
                         prefetch=1, poll_interval=0.05, resync_interval=3600, lease=60.0)
    try:
        running = s.schedule("running", s.clock(), 0, h.hold, ["c-started", "c-release"])
        assert h.event("c-started").wait(HANG_GUARD)
        waiting = s.schedule("waiting", s.clock(), 0, h.note, ["waiting"])
        h.wait_for(lambda: s.stats()["claimed"] == 2, what="the second claim")
        pg["admin"].execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT 0")
        terminate_worker_sessions(pg["admin"])
        assert not s.close(wait=False)  # closing: the waiting claim is never started
        h.event("c-release").set()
        h.wait_for(lambda: ("running", "end", None) in h.CALLS, what="the run's end")
        returned = threading.Event()
        result: list[bool] = []
        closer = threading.Thread(target=lambda: (result.append(s.close(timeout=0.2)),
                                                  returned.set()))
        closer.start()
        assert returned.wait(HANG_GUARD), "close(timeout) did not return while the database" \
                                          " was down"
        assert result == [False] and s.state == "closing"
        assert not running.done()  # its outcome is not stored yet
        pg["admin"].execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
        assert s.close(timeout=HANG_GUARD) and s.closed
        assert running.result(0) is False
        with pytest.raises(SchedulerClosed):
            waiting.result(0)
        assert ("waiting", "waiting") not in h.CALLS
        client = PostgresStore(pg["url"], table=pg["table"])
        try:
            done, back = client.get("running"), client.get("waiting")
        finally:
            client.close()
        assert done is not None and (done["state"], done["attempts"]) == ("completed", 1)
        assert back is not None and (back["state"], back["attempts"]) == ("pending", 0)
        assert back["lease_token"] is None
        stats = s.stats()
        assert (stats["completed"], stats["handed_back"], stats["not_recorded"]) == (1, 1, 0)
    finally:
        pg["admin"].execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
        h.event("c-release").set()
        s.close(timeout=HANG_GUARD)
        s.store.close()


def backends_waiting_on_a_lock(admin: Any, query_part: str) -> list[int]:
    """The worker role's backends blocked on a lock in a statement containing ``query_part``."""
    return [pid for (pid,) in admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'"
        " AND strpos(query, %s) > 0", (ROLE, query_part)).fetchall()]


@pytest.mark.parametrize("interruption", ["terminated", "timed out"])
def test_an_outcome_write_cut_off_mid_statement_is_stored_once_later(
        pg: dict[str, Any], interruption: str,
        outcome_failures: LogWatch) -> None:
    """The outcome write is sent and blocks on a row lock another session holds; then
    its backend is terminated (pg_terminate_backend), or its statement times out
    (statement_timeout): the write never committed, the outcome is kept and written
    again on a new connection or the same one, and once the lock is gone it is stored
    exactly once. (It fails if the outcome were dropped, or written twice.)"""
    import psycopg

    if interruption == "timed out":
        pg["admin"].execute(f"ALTER ROLE {ROLE} SET statement_timeout = '200ms'")
    s = DurableScheduler(PostgresStore(pg["worker_url"], table=pg["table"]),
                         poll_interval=0.05, resync_interval=3600, lease=60.0)
    locker = psycopg.connect(pg["url"])
    try:
        future = s.schedule("held", s.clock(), 0, h.hold, ["w-started", "w-release"])
        assert h.event("w-started").wait(HANG_GUARD)
        locker.execute(f"SELECT 1 FROM {pg['table']} WHERE task_id = 'held' FOR UPDATE")
        h.event("w-release").set()
        if interruption == "terminated":
            h.wait_for(lambda: backends_waiting_on_a_lock(pg["admin"], "WHERE task_id = ANY"),
                       what="the outcome write to block on the row lock")
            for pid in backends_waiting_on_a_lock(pg["admin"], "WHERE task_id = ANY"):
                pg["admin"].execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        assert outcome_failures.wait_for(1), "the outcome write was never cut off"
        assert not future.done()
        locker.rollback()
        assert future.result(HANG_GUARD) is False
        row = s.row("held")
        assert row is not None and (row["state"], row["attempts"]) == ("completed", 1)
        assert row["lease_token"] is None
        stats = s.stats()
        assert (stats["completed"], stats["not_recorded"]) == (1, 0)
        assert s.schedule("next", s.clock(), 0, h.note, ["next"]).result(HANG_GUARD) == "next"
    finally:
        locker.close()
        pg["admin"].execute(f"ALTER ROLE {ROLE} RESET statement_timeout")
        h.event("w-release").set()
        s.close(timeout=HANG_GUARD)
        s.store.close()


def test_a_claim_cut_off_mid_statement_is_tried_again_and_runs_the_task_once(
        pg: dict[str, Any]) -> None:
    """The claim statement is sent and blocks on a table lock another session holds;
    its backend is terminated: the claim committed nothing, the claimer logs it, backs
    off and claims again on a new connection once the lock is gone, and the task runs
    once, at attempt 1. The row becomes due while the table is locked by moving the
    scheduler's clock, so the claim is certainly sent under the lock."""
    import psycopg

    offset = [0.0]
    claim_failures = LogWatch("claim failed")
    logger = logging.getLogger("pysched.durable")
    logger.addHandler(claim_failures)
    s = DurableScheduler(PostgresStore(pg["worker_url"], table=pg["table"]),
                         poll_interval=0.05, resync_interval=3600, lease=60.0,
                         clock=lambda: time.monotonic() + offset[0])
    locker = psycopg.connect(pg["url"])
    try:
        future = s.schedule("later", s.clock() + 5, 0, h.note, ["later"])
        locker.execute(f"LOCK TABLE {pg['table']} IN EXCLUSIVE MODE")
        offset[0] += 5
        h.wait_for(lambda: backends_waiting_on_a_lock(pg["admin"], "SKIP LOCKED"),
                   what="the claim to block on the table lock")
        for pid in backends_waiting_on_a_lock(pg["admin"], "SKIP LOCKED"):
            pg["admin"].execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        assert claim_failures.wait_for(1), "the claim was never cut off"
        locker.rollback()
        assert future.result(HANG_GUARD) == "later"
        assert h.CALLS.count(("later", "later")) == 1
        row = s.row("later")
        assert row is not None and (row["state"], row["attempts"]) == ("completed", 1)
    finally:
        logger.removeHandler(claim_failures)
        locker.close()
        s.close(timeout=HANG_GUARD)
        s.store.close()


def test_close_from_a_series_run_and_from_two_threads_at_once(
        make: Callable[..., DurableScheduler]) -> None:
    """A recurring run calls close() (waiting, with a timeout, and not waiting): each
    returns at once with False (closing) instead of waiting for the run itself; two
    other threads calling close() at the same time both return True once it is closed,
    and a close() after that returns True too."""
    CLOSED_FROM_A_SERIES.clear()
    s = make()
    CLOSING[:] = [s]
    s.schedule_recurring("closer", Every(0.05), 0, series_close)
    with SERIES_FIRED:
        assert SERIES_FIRED.wait_for(lambda: CLOSED_FROM_A_SERIES, HANG_GUARD)
    assert CLOSED_FROM_A_SERIES[0] == (False, False, False)
    results: list[bool] = []
    closers = [threading.Thread(target=lambda: results.append(s.close(timeout=HANG_GUARD)))
               for _ in range(2)]
    for closer in closers:
        closer.start()
    for closer in closers:
        closer.join(HANG_GUARD)
    assert results == [True, True] and s.closed
    assert s.close() and s.close(wait=False)
    assert len(CLOSED_FROM_A_SERIES) == 1  # nothing fired after close began


@pytest.mark.parametrize("name", ["lease", "poll_interval", "resync_interval", "stale_after",
                                  "max_clock_skew", "retention"])
def test_durations_past_what_a_thread_can_wait_are_refused_by_name(name: str) -> None:
    # lease=1e300 was taken, and the heartbeat thread died on its first wait
    # (OverflowError) while the scheduler went on serving without renewals.
    with pytest.raises(ValueError, match=f"{name} must be at most"):
        DurableScheduler(None, **{name: 1e300})
    DurableScheduler(None, **{name: 3600.0}).close()
