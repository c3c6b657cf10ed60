"""ThreadSafeBoundedPriorityQueue: StableBoundedPriorityQueue shared by producers and consumers.

Producers never block: ``push`` applies the queue's admission rule at once
(accepted, evicting the worst, or refused). Consumers block in ``get`` until an
entry arrives, the timeout passes, or the queue is closed.

States: open -> closed, by ``close()`` (idempotent). While open everything
works. Once closed, pushes raise QueueClosed; ``get`` still hands out the
entries left (a drain) and raises QueueClosed only when the queue is empty;
``close()`` wakes every waiting consumer.

Lock order: one lock, ``_lock``, with one Condition on it, ``_not_empty``; no
other lock is taken while it is held. Under it run only the single-threaded
queue's methods, which call a key's or tenant's ``__hash__``/``__eq__`` (as any
dict under a lock does): those must not call back into this queue, or they
deadlock. Never under it: priority conversion (``__index__``) and hashability
checks, done before the lock is taken, and the release of what leaves the
queue: push and get return the entry that carries its value, key and tenant,
and remove() its value, so their finalisers run outside the lock. (Only the
key and tenant objects of a removed entry may be released under it.)

Invariant: a consumer waits on ``_not_empty`` only while the queue is empty
and open; every accepted push notifies one waiter and ``close()`` all of them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from queue import Empty
from typing import Any

from . import _impl
from ._validate import check_hashable, check_priority, check_time

__all__ = ["Empty", "QueueClosed", "ThreadSafeBoundedPriorityQueue"]


class QueueClosed(RuntimeError):
    """A push to a closed queue, or a get from a closed queue with nothing left."""


class ThreadSafeBoundedPriorityQueue:
    """A StableBoundedPriorityQueue behind one lock, with a blocking ``get``.

    The admission rule, the order and the errors are those of
    ``StableBoundedPriorityQueue``. ``queue_type`` picks the single-threaded
    class to wrap (by default the selected core, ``pysched.IMPLEMENTATION``).

    >>> q = ThreadSafeBoundedPriorityQueue(2)
    >>> q.push(3, "c"), q.push(1, "a"), q.push(9, "z")
    (True, True, False)
    >>> q.get(), q.get(timeout=0)
    ('a', 'c')
    >>> q.close()
    >>> q.get()
    Traceback (most recent call last):
      ...
    pysched.bounded.QueueClosed: get from a closed, empty queue
    """

    def __init__(self, capacity: int, *, tenant_limit: int | None = None,
                 queue_type: type | None = None) -> None:
        if queue_type is None:
            queue_type = _impl.StableBoundedPriorityQueue
        self._queue = queue_type(capacity, tenant_limit=tenant_limit)
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._closed = False
        self._waiting = 0  # consumers inside _not_empty.wait()

    @property
    def capacity(self) -> int:
        """The most entries the queue holds."""
        return int(self._queue.capacity)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def __len__(self) -> int:
        """The number of entries now (it may change at once)."""
        with self._lock:
            return len(self._queue)

    def push(self, priority: int, value: Any, *, key: Hashable | None = None,
             tenant: Hashable | None = None) -> bool:
        """Offer an entry without blocking; return whether it was accepted.

        The admission rule of ``StableBoundedPriorityQueue.push``; QueueClosed
        once closed. Wakes one waiting consumer when accepted.
        """
        dropped = self.push_or_evict(priority, value, key=key, tenant=tenant)
        return dropped is None or dropped.reason == "evicted"

    def push_or_evict(self, priority: int, value: Any, *, key: Hashable | None = None,
                      tenant: Hashable | None = None) -> Any:
        """Offer an entry without blocking; return the entry dropped, or None.

        As ``StableBoundedPriorityQueue.push_or_evict``: the evicted old worst
        (reason ``"evicted"``), the refused newcomer (``"capacity"``,
        ``"quota"``), or None. QueueClosed once closed.
        """
        priority = check_priority(priority, "priority")
        if key is not None:
            check_hashable(key, "key")
        if tenant is not None:
            check_hashable(tenant, "tenant")
        with self._lock:
            if self._closed:
                raise QueueClosed("push to a closed queue")
            dropped = self._queue.push_or_evict(priority, value, key=key, tenant=tenant)
            if dropped is None or dropped.reason == "evicted":
                self._not_empty.notify()
        return dropped  # released by the caller, outside the lock

    def get(self, timeout: float | None = None) -> Any:
        """Remove and return the best value, waiting for one while the queue is empty.

        ``timeout`` (seconds, >= 0) bounds the wait: then ``queue.Empty`` is
        raised (``timeout=0`` never waits). QueueClosed when the queue is
        closed and empty; entries left at ``close()`` are still handed out.
        """
        return self.get_entry(timeout).value

    def get_entry(self, timeout: float | None = None) -> Any:
        """As ``get``, but return the whole entry (a QueueEntry, reason ``"popped"``)."""
        deadline = None
        if timeout is not None:
            timeout = check_time(timeout, "timeout")
            if timeout < 0:
                raise ValueError(f"timeout must be >= 0, got {timeout!r}")
            deadline = time.monotonic() + timeout
        with self._not_empty:
            while not self._queue:
                if self._closed:
                    raise QueueClosed("get from a closed, empty queue")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise Empty
                if remaining is not None:
                    # Longer waits overflow the platform's lock; the loop
                    # waits again until the deadline.
                    remaining = min(remaining, threading.TIMEOUT_MAX)
                self._waiting += 1
                try:
                    self._not_empty.wait(remaining)
                finally:
                    self._waiting -= 1
            entry = self._queue.pop_entry()
        return entry  # its key and tenant are released outside the lock

    def remove(self, key: Hashable) -> Any:
        """Take the entry of ``key`` out and return its value; KeyError if absent."""
        check_hashable(key, "key")
        with self._lock:
            return self._queue.remove(key)

    def reprioritize(self, key: Hashable, priority: int) -> None:
        """Give the entry of ``key`` a new priority and a fresh seq; KeyError if absent."""
        priority = check_priority(priority, "priority")
        check_hashable(key, "key")
        with self._lock:
            self._queue.reprioritize(key, priority)

    def snapshot(self) -> list[tuple[int, int, Any]]:
        """Every entry as ``(priority, seq, value)``, best first, at one instant."""
        with self._lock:
            return list(self._queue.snapshot())

    def stats(self) -> dict[str, int]:
        """The wrapped queue's counters, and ``waiting`` consumers, read at one instant."""
        with self._lock:
            return {**self._queue.stats(), "waiting": self._waiting}

    def close(self) -> None:
        """Refuse further pushes and wake every waiting consumer; idempotent."""
        with self._lock:
            self._closed = True
            self._not_empty.notify_all()

    def _check(self) -> None:
        """Assert the wrapped queue's invariants, under the lock (tests call this)."""
        with self._lock:
            self._queue._check()
