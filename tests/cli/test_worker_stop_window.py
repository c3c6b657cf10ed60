"""The worker's drain counts stop signals from when it has acted on the last one.

A signal's time is taken when its handler runs, on the main thread; a main
thread held up while it acts on the first stop (a slow store, a full stderr
pipe on a loaded machine) runs the handler of a repeat that arrived meanwhile
late. That repeat is still the same stop request, not the next one.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from typing import Any

from pysched.cli import worker
from pysched.cli._common import ExitCode

HANG_GUARD = 30.0  # seconds: a guard against a hang, never a speed check


class FakeScheduler:
    """What the drain asks of a DurableScheduler: close it, read its counters."""

    def close(self, wait: bool = True) -> None:
        pass

    def stats(self) -> dict[str, int]:
        return dict.fromkeys(("completed", "failed", "errors", "stopped_by_close", "handed_back",
                              "series_fires", "series_failed"), 0)


class SlowPool:
    """A pool whose first close(wait=False) is where a repeat signal arrives, handled late."""

    def __init__(self, inbox: Any, delay: float) -> None:
        self.inbox, self.delay = inbox, delay
        self.cancelled = False
        self.closes = 0

    def close(self, wait: bool = True, cancel_running: bool = False) -> None:
        self.closes += 1
        if cancel_running:
            self.cancelled = True
        if self.closes == 1:
            # The repeat's handler runs after a main thread held up for `delay`
            # seconds: its time is taken then, as a real handler's would be.
            started = time.monotonic()
            while time.monotonic() - started < self.delay:
                time.sleep(0.01)
            self.inbox._on_signal(signal.SIGINT, None)

    def stats(self) -> dict[str, int]:
        return {"running": 0}


def test_a_repeat_handled_late_while_the_worker_acts_on_the_first_is_the_same_stop() -> None:
    inbox = worker._Inbox()
    pool = SlowPool(inbox, delay=worker.REPEAT_WINDOW * 1.5)
    first = worker._Signal(signal.SIGTERM, time.monotonic())
    args = argparse.Namespace(grace=60.0, cancel_grace=0.0, lease=30.0)
    status = worker._drain(FakeScheduler(), pool, inbox, first, args)  # type: ignore[arg-type]
    assert status is ExitCode.OK
    assert not pool.cancelled, "a repeat of the first stop set the running tasks' cancel tokens"


def test_a_signal_delivered_to_another_thread_reaches_a_waiting_main_thread() -> None:
    # The kernel hands a process's signal to any thread; Python runs its handler on
    # the main thread only when that thread runs again. A main thread asleep in
    # the inbox must wake for it, not wait for the next thing put in the inbox.
    inbox = worker._Inbox()
    restore = inbox.install()
    other_started, stop_other = threading.Event(), threading.Event()

    def other() -> None:
        other_started.set()
        stop_other.wait()

    thread = threading.Thread(target=other)
    thread.start()
    guard = threading.Timer(HANG_GUARD, inbox.put, args=("hang guard",))
    try:
        assert other_started.wait(HANG_GUARD)
        assert thread.ident is not None
        signal.pthread_kill(thread.ident, signal.SIGTERM)
        guard.start()
        event = inbox.next(None)
    finally:
        guard.cancel()
        stop_other.set()
        thread.join()
        restore()
    assert isinstance(event, worker._Signal) and event.number == signal.SIGTERM, event
