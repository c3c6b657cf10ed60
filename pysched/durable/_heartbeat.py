"""The heartbeat: renew the leases of the runs in flight here, on a thread of its own.

It renews too the leases of ended runs whose outcomes wait to be stored
(``OutcomeQueue.tokens``): a version that ran is never released for another
worker to run again while its outcome is on its way.

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
import logging
import time
from collections.abc import Callable

from ._counters import Counters, guarded
from ._inflight import Inflight, RunningTask
from ._lifecycle import Lifecycle, Wakeup
from ._settings import Settings
from .store import Store

__all__ = ["Heartbeat"]

log = logging.getLogger("pysched.durable")


class Heartbeat:
    """The heartbeat thread's loop (``run``): every ``beat`` seconds while claims are in
    flight here, until closed and drained. It waits on ``wakeup``, rung when the life
    cycle changes."""

    def __init__(self, settings: Settings, store: Store, *, clock: Callable[[], float],
                 lifecycle: Lifecycle, inflight: Inflight, counters: Counters,
                 wakeup: Wakeup, waiting: Callable[[], list[str]] = list,
                 also: Callable[[], object] = lambda: None,
                 lost: Callable[[list[RunningTask]], object] = lambda runs: None) -> None:
        self._s = settings
        self._store = store
        self._clock = clock
        self._lifecycle = lifecycle
        self._inflight = inflight
        self._counters = counters
        self._wakeup = wakeup
        self._waiting = waiting  # the tokens of ended runs whose outcomes wait to be stored
        self._also = also  # renews the fire-time leases of recurring series runs here
        self._lost = lost  # told of the runs whose leases were lost (their events)
        self.renewed = 0  # leases renewed, for tests and stats

    def run(self) -> None:
        next_beat = time.monotonic() + self._s.beat
        while True:
            while True:
                if self._lifecycle.drained(self._inflight):
                    return  # nothing will hold a lease here any more
                left = next_beat - time.monotonic()
                if left <= 0:
                    break
                self._wakeup.wait(left)
            next_beat = time.monotonic() + self._s.beat
            guarded(self.renew, "heartbeat", self._counters)
            guarded(self._also, "series heartbeat", self._counters)

    def renew(self) -> None:
        """Renew the leases of the claims in flight here; move their deadlines, flag the
        ones lost."""
        s = self._s
        renewed, lost = self._inflight.renew(
            functools.partial(self._store.heartbeat, s.owner, s.lease), self._clock,
            s.live_until)
        self._counters.add("leases_lost", len(lost))
        waiting = self._waiting()
        if waiting:  # ended runs keep their leases until their outcomes are stored
            renewed += len(self._store.heartbeat(s.owner, s.lease, waiting))
        self.renewed += renewed
        if lost:
            log.warning("%d lease(s) of claims in flight here were lost (this process was"
                        " paused or starved for longer than the lease?): %s; those not started"
                        " never start here, another worker may run them again, and what runs"
                        " here is not recorded", len(lost),
                        ", ".join(repr(run.task_id) for run in lost[:10]))
            self._lost(lost)
