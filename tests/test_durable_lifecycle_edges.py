"""The durable worker's life cycle at its edges: what escapes a run, clocks that fail
in the worker's threads, close() raced and repeated.

Each test orders its steps with events and a clock that fails on demand in one
named thread, never with sleeps that hope; every wait has a hang guard only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import durable_helpers as h
import pytest
from durable_helpers import store_spec  # noqa: F401 - a fixture

from pysched import durable
from pysched.durable import DurableScheduler

HANG_GUARD = 30.0


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Iterator[Callable[..., DurableScheduler]]:  # noqa: F811
    yield from h.schedulers(store_spec)


@durable.task(name="lifecycle-raise-system-exit")
def raise_system_exit() -> None:
    h.CALLS.append(("system-exit",))
    raise SystemExit(3)


@durable.task(name="lifecycle-raise-keyboard-interrupt")
def raise_keyboard_interrupt() -> None:
    h.CALLS.append(("keyboard-interrupt",))
    raise KeyboardInterrupt


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
    s = make()
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

