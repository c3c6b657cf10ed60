"""The pool's lock: a lock that never parks a thread on it while the GIL holds the others.

Why not ``threading.Lock``: under the GIL, a thread that finds the pool's
lock held parks on the lock's semaphore. While any thread is parked there,
every release wakes one; the woken thread owns the lock but must still wait
for the GIL, so the thread that holds the GIL blocks on its very next
acquisition, and parks in turn. Once started (a GIL switch inside a critical
section is enough), this convoy feeds itself: measured with 50,000 due
no-ops through 4 workers, runs that fell into it made one context switch
per task (about 90,000 per run, against 1,500) and ran at half the rate of
runs that did not, and nothing but chance decided which a run got.

``PoolLock`` takes the lock only with a non-blocking attempt, so only a
running thread ever owns it, and a release never wakes anybody. A thread
that finds it held lets the GIL go with a short sleep (the holder is
waiting for the GIL, or is preempted) and tries again, backing off up to
``MAX_POLL`` seconds. Condition waiters are the exception: they wait for a
notify anyway, and re-take the lock blocking, as with any lock, so a
notified thread starts as soon as the notifier releases.

Where the GIL is disabled (free-threaded builds), threads really run at
once and the convoy cannot form this way: ``pool_lock()`` then gives a
plain ``threading.Lock``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, cast

__all__ = ["MAX_POLL", "PoolLock", "hot_path_ops", "pool_lock"]

FIRST_POLL = 2e-6  # seconds; Linux rounds a sleep up to its timer slack (about 50 us)
MAX_POLL = 2e-4  # the longest sleep between attempts, so a freed lock waits little

_sleep = time.sleep
_monotonic = time.monotonic


class PoolLock:
    """A mutual-exclusion lock with ``threading.Lock``'s methods (see the module docstring)."""

    __slots__ = ("_try", "release", "locked", "_raw")

    def __init__(self) -> None:
        self._raw = raw = threading.Lock()
        self._try = raw.acquire
        self.release = raw.release
        self.locked = raw.locked

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """As ``Lock.acquire``: True once held; False if not held by ``timeout``."""
        if timeout != -1:  # threading.Lock's checks, before anything changes
            if not blocking:
                raise ValueError("can't specify a timeout for a non-blocking call")
            if timeout < 0:
                raise ValueError("timeout value must be a non-negative number")
        if self._try(False):
            return True
        if not blocking:
            return False
        return self._poll(None if timeout == -1 else _monotonic() + timeout)

    def __enter__(self) -> bool:
        if not self._try(False):
            self._poll(None)
        return True

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def wait_acquire(self) -> None:
        """Acquire a lock that a non-blocking attempt found held."""
        self._poll(None)

    def _poll(self, deadline: float | None) -> bool:
        """Sleep and try again until held, or until ``deadline`` on the monotonic clock."""
        delay = FIRST_POLL
        while True:
            _sleep(delay)
            if self._try(False):
                return True
            if deadline is not None and _monotonic() >= deadline:
                return False
            delay = min(delay * 2, MAX_POLL)

    # -- what threading.Condition uses when its lock offers it ---------------------

    def _release_save(self) -> None:
        self.release()

    def _acquire_restore(self, state: None) -> None:
        # A notified waiter parks on the lock: it was woken to run, and the
        # notifier releases right after (see the module docstring).
        self._raw.acquire()

    def _is_owned(self) -> bool:
        # As threading.Condition's test for a plain Lock: held, by someone.
        return self.locked()

    def __repr__(self) -> str:
        return f"<PoolLock {'locked' if self.locked() else 'unlocked'}>"


def pool_lock() -> threading.Lock:
    """The lock a pool's threads share: a PoolLock, unless the GIL is disabled.

    Typed as ``threading.Lock``, whose methods PoolLock has, so that
    Conditions and tokens take either.
    """
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    if gil_enabled is not None and not gil_enabled():
        return threading.Lock()
    return cast(threading.Lock, PoolLock())


def hot_path_ops(lock: threading.Lock) -> tuple[Callable[[bool], bool], Callable[[], object],
                                                Callable[[], None]]:
    """``(try_acquire, wait_acquire, release)`` of ``lock``, for the busiest critical sections.

    ``with`` on a PoolLock costs two calls of Python methods (about 0.17 us a
    section); these are the lock's C methods themselves, and the wait for
    when ``try_acquire(False)`` found it held::

        if not try_acquire(False):
            wait_acquire()
        try:
            ...
        finally:
            release()
    """
    if isinstance(lock, PoolLock):
        return lock._try, lock.wait_acquire, lock.release
    return lock.acquire, lock.acquire, lock.release
