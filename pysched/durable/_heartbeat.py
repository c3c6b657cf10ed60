"""The heartbeat: renew the leases of the runs in flight here, on a thread of its own.

Only the tokens of claims this process holds in ``inflight`` are renewed: a
lease it does not know of (a claim whose answer was lost with the connection)
expires and its row is claimed again. Its own thread, so that a slow re-read
or a store call of another job never delays a renewal.

Each renewal moves a run's local deadline (``live_until``) to the time the
renewal was sent plus the trusted part of the lease; a token asked for and
not renewed is a lease lost (this process was paused or starved past its
lease and another took the row, or the row was released): that run is
flagged, so if it has not started it never starts, and if it runs, it learns
it from ``current_task().lease_lost``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from ._local import RunningTask
from ._running import renew
from ._shared import OPEN, Shared, log

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
                runs = [run for run in s.inflight.values() if not run.lease_lost]
            next_beat = time.monotonic() + s.beat
            if runs:
                s.guarded(functools.partial(self.renew, runs), "heartbeat")
            s.guarded(self._also, "series heartbeat")

    def renew(self, runs: list[RunningTask]) -> None:
        """Renew the leases of ``runs``; move their deadlines, flag the ones lost."""
        s = self._s
        renewed, lost = renew(runs, functools.partial(s.store.heartbeat, s.owner, s.lease),
                              s.clock, s.live_until, s.lock, s.inflight)
        with s.lock:
            s.counts["leases_lost"] += len(lost)
        self.renewed += renewed
        if lost:
            log.warning("%d lease(s) of claims in flight here were lost (this process was"
                        " paused or starved for longer than the lease?): %s; those not started"
                        " never start here, another worker may run them again, and what runs"
                        " here is not recorded", len(lost),
                        ", ".join(repr(run.task_id) for run in lost[:10]))
