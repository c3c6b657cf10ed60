"""The life cycle of one DurableScheduler, and the wake-ups its job threads wait on.

``Lifecycle`` is the state machine. Legal transitions, each made once:

- open -> closing (``begin_close``, by ``close()``): no new schedules, no new
  claims; claimed runs not yet started are handed back, running ones finish;
- closing -> closed (``finish``, by the housekeeping thread once drained:
  nothing in flight and the claiming thread gone).

``store_released`` turns true once, while closing, just before the store is
closed (``release_store``): from then on the public calls that reach the
store raise SchedulerClosed (``_gate.StoreGate``).

``dispatching`` turns false once, when the claiming thread has exited (at once
for a producer, which never claims). Every change rings the wake-ups given to
``on_change``, outside the lifecycle's lock.

``Wakeup`` is what one job thread waits on. Whoever changes something that
thread waits for rings it after the change; the thread looks at what it waits
for (holding no lock of the wake-up's), then waits, which returns at once if
it was rung since it last waited: no ring is lost, and a ringer never waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sized

__all__ = ["CLOSED", "CLOSING", "OPEN", "Lifecycle", "Wakeup"]

OPEN, CLOSING, CLOSED = "open", "closing", "closed"


class Wakeup:
    """What one thread waits on; ``ring()`` wakes it from any thread.

    A binary semaphore: a ring makes the thread's next ``wait`` return at once,
    and rings before it count as one. So a ring made while the thread looked
    is never lost (at worst the thread looks once more and finds nothing), and
    a ring costs one release of a lock, never a wait for one.
    """

    def __init__(self) -> None:
        self._rung = threading.Lock()
        self._rung.acquire()  # held while not rung

    def ring(self) -> None:
        """Wake the thread, or make its next ``wait`` return at once."""
        try:  # noqa: SIM105 - one per run's end: contextlib.suppress costs more
            self._rung.release()
        except RuntimeError:  # rung already, and not waited for since
            pass

    def wait(self, timeout: float | None) -> None:
        """Wait until rung (since the last wait) or ``timeout`` seconds (None: until rung)."""
        if timeout is None:
            self._rung.acquire()
        else:
            self._rung.acquire(timeout=min(max(timeout, 0.0), threading.TIMEOUT_MAX))


class Lifecycle:
    """open -> closing -> closed, and whether the claiming thread still runs."""

    def __init__(self, *, dispatching: bool) -> None:
        self._lock = threading.Lock()
        self._closed = threading.Condition(self._lock)  # close(wait=True) waits on it
        self._state = OPEN
        self._dispatching = dispatching
        self._store_released = False
        self._closing = threading.Event()  # set when close() begins: ends backoff waits
        self._rings: list[Callable[[], None]] = []

    def on_change(self, ring: Callable[[], None]) -> None:
        """Call ``ring()`` after each change (a job's ``Wakeup.ring``); at start-up only."""
        self._rings.append(ring)

    @property
    def state(self) -> str:
        """open, closing or closed."""
        return self._state

    @property
    def is_open(self) -> bool:
        return self._state == OPEN

    @property
    def dispatching(self) -> bool:
        """Whether the claiming thread may still hand out runs."""
        return self._dispatching

    @property
    def store_released(self) -> bool:
        """Whether the scheduler has let go of its store (it is closed, or about to be)."""
        return self._store_released

    def drained(self, inflight: Sized) -> bool:
        """Closing, and nothing can produce an outcome any more: no claiming thread and
        nothing in ``inflight``."""
        return self._state != OPEN and not self._dispatching and not inflight

    def begin_close(self) -> bool:
        """open -> closing; False if it was not open (close() is idempotent)."""
        with self._lock:
            if self._state != OPEN:
                return False
            self._state = CLOSING
        self._closing.set()
        self._ring()
        return True

    def dispatch_ended(self) -> None:
        """The claiming thread has exited: no claim will start a run any more."""
        self._dispatching = False
        self._ring()

    def release_store(self) -> None:
        """The store is about to be closed: no public call may reach it any more."""
        self._store_released = True

    def finish(self) -> None:
        """closing -> closed: everything is drained and shut down."""
        with self._lock:
            self._state = CLOSED
            self._closed.notify_all()
        self._ring()

    def wait_closed(self, timeout: float | None) -> bool:
        """Wait until closed, at most ``timeout`` seconds (None: for ever); whether it is."""
        if timeout is not None:
            timeout = min(timeout, threading.TIMEOUT_MAX)
        with self._lock:
            return self._closed.wait_for(lambda: self._state == CLOSED, timeout)

    def wait_closing(self, timeout: float) -> bool:
        """Sleep ``timeout`` seconds, cut short when close() begins; whether it has."""
        return self._closing.wait(timeout)

    def _ring(self) -> None:
        for ring in self._rings:
            ring()
