"""The heartbeat: renew the leases of the runs in flight here, on a thread of its own.

Only the tokens of claims this process holds in ``inflight`` are renewed: a
lease it does not know of (a claim whose answer was lost with the connection)
expires and its row is claimed again. Its own thread, so that a slow re-read
or a store call of another job never delays a renewal.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from ._shared import OPEN, Shared

__all__ = ["Heartbeat"]


class Heartbeat:
    """The heartbeat thread's loop (``run``): every ``beat`` seconds while runs are in flight."""

    def __init__(self, shared: Shared, also: Callable[[], object] = lambda: None) -> None:
        self._s = shared
        self._also = also  # renews the fire-time leases of recurring series runs here
        self.renewed = 0  # leases renewed, for tests and stats

    def run(self) -> None:
        s = self._s
        next_beat = time.monotonic() + s.beat
        while True:
            with s.lock:
                while True:
                    if s.state != OPEN and not s.dispatching and not s.inflight:
                        return  # drained: nothing will hold a lease here any more
                    left = next_beat - time.monotonic()
                    if left <= 0:
                        break
                    s.heart.wait(left)
                tokens = list(s.inflight)
            next_beat = time.monotonic() + s.beat
            if tokens:
                s.guarded(functools.partial(self._renew, tokens), "heartbeat")
            s.guarded(self._also, "series heartbeat")

    def _renew(self, tokens: list[str]) -> None:
        self.renewed += self._s.store.heartbeat(self._s.owner, self._s.lease, tokens)
