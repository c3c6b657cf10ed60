"""Listening (notifying stores): re-read the rows other processes wrote.

After the store (re)subscribes, it answers with an empty set and this job
re-reads everything at once: writes made while it was not listening were
never announced. Any other request for a full re-read (a ``*`` or a garbled
payload, which any database role may send) is debounced by the mirror.
"""

from __future__ import annotations

import logging

from ._backoff import Backoff
from ._counters import Counters
from ._lifecycle import Lifecycle
from ._mirror import Mirror
from .store import Store

__all__ = ["Listener"]

log = logging.getLogger("pysched.durable")


class Listener:
    """The listening thread's loop (``run``)."""

    def __init__(self, store: Store, mirror: Mirror, lifecycle: Lifecycle, counters: Counters,
                 *, poll: float) -> None:
        self._store = store
        self._mirror = mirror
        self._lifecycle = lifecycle
        self._counters = counters
        self._poll = poll
        self._backoff = Backoff(poll, max(poll, 5.0))

    def run(self) -> None:
        store = self._store
        while self._lifecycle.is_open:
            try:
                subscribed = store.subscriptions
                # A short wait, so that close() is not held up by the listener.
                changed = store.wait_changes(min(self._poll, 0.25))
                if changed is not None and self._lifecycle.is_open:
                    if changed:
                        self._mirror.sync(store.rows(sorted(changed)))
                    if store.subscriptions != subscribed:
                        self._mirror.resync()
                    elif not changed or getattr(changed, "everything", False):
                        self._mirror.resync_asked()
                self._backoff.succeeded()
            except Exception:
                delay = self._backoff.failed()
                log.exception("listening for changes failed; retrying in %.2f s", delay)
                self._counters.add("store_errors")
                self._lifecycle.wait_closing(delay)
