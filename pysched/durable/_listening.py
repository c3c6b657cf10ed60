"""Listening (notifying stores): re-read the rows other processes wrote.

After the store (re)subscribes, it answers with an empty set and this job
re-reads everything at once: writes made while it was not listening were
never announced. Any other request for a full re-read (a ``*`` or a garbled
payload, which any database role may send) is debounced by the mirror.
"""

from __future__ import annotations

from ._mirror import Mirror
from ._shared import OPEN, Backoff, Shared, log

__all__ = ["Listener"]


class Listener:
    """The listening thread's loop (``run``)."""

    def __init__(self, shared: Shared, mirror: Mirror) -> None:
        self._s = shared
        self._mirror = mirror
        self._backoff = Backoff(shared.poll, max(shared.poll, 5.0))

    def run(self) -> None:
        s = self._s
        store = s.store
        while s.state == OPEN:
            try:
                subscribed = store.subscriptions
                # A short wait, so that close() is not held up by the listener.
                changed = store.wait_changes(min(s.poll, 0.25))
                if changed is not None and s.state == OPEN:
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
                with s.lock:
                    s.counts["store_errors"] += 1
                s.closing.wait(delay)
