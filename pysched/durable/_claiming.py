"""Claiming: wait for the local head, claim a batch of due rows, hand it to the runs.

At most ``cap`` (max_workers + prefetch) claimed versions are in flight here,
plus, when no prefetch was given, up to ``grow`` more: as many as this worker
has recently been finishing in ``AUTO_WAIT`` seconds (and in a tenth of the
lease), so a backlog of short tasks is claimed in larger batches, one commit
each, while a claimed row still waits only a moment for a thread: long tasks
keep the batch at max_workers + prefetch and leave the rest to other workers.
A round that fails (its claim, or a reading of the clock: the rule of
``_clocks``) is retried with backoff; the entries it popped go back on the
local heap, and the leases a failed claim may have taken (the database
committed, then the answer was lost or could not be read) are released at
once by its batch prefix instead of lapsing a lease later. The store, not the
heap, decides what is claimed, so a stale entry costs one claim that finds
nothing.

Each claim's lease is trusted here until ``Settings.live_until`` of the moment
the claim statement was sent: the runs check it before they start.

The thread waits on its ``Wakeup``, rung when the local heap changes, when a
run ends (room) and when the life cycle changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ._backoff import Backoff
from ._counters import Counters, guarded
from ._inflight import Inflight
from ._lifecycle import Lifecycle, Wakeup
from ._mirror import Entry, Mirror
from ._running import Runs
from ._settings import Routing, Settings
from .store import Store, batch_prefix

__all__ = ["AUTO_PREFETCH_MAX", "AUTO_WAIT", "Claimer"]

log = logging.getLogger("pysched.durable")

AUTO_PREFETCH_MAX = 256  # claims beyond max_workers + prefetch, at most
AUTO_WAIT = 0.1  # seconds of this worker's recent finishing rate a batch may hold unstarted


class Claimer:
    """The claiming thread's loop (``run``)."""

    def __init__(self, settings: Settings, store: Store, *, routing: Routing, mirror: Mirror,
                 runs: Runs, inflight: Inflight, lifecycle: Lifecycle, counters: Counters,
                 clock: Callable[[], float], wakeup: Wakeup) -> None:
        self._s = settings
        self._store = store
        self._routing = routing
        self._mirror = mirror
        self._runs = runs
        self._inflight = inflight
        self._lifecycle = lifecycle
        self._counters = counters
        self._clock = clock
        self._wakeup = wakeup
        self._backoff = Backoff(settings.poll, max(settings.poll, 5.0))
        self.rate = 0.0  # claims finished per second of ``clock``, smoothed over claim rounds
        self._seen = (clock(), 0)  # (clock, claims finished) at the last measure

    def run(self) -> None:
        try:
            while self._lifecycle.is_open:
                popped: list[Entry] = []
                try:
                    room = self._due(popped)
                    if popped:
                        self._claim(popped, room)
                except Exception:  # a failing clock reading, or a claim: tried again later
                    self._retry_later(popped)
        finally:
            self._runs.close_pool()
            self._lifecycle.dispatch_ended()

    def _due(self, popped: list[Entry]) -> int:
        """Wait for due entries and room for them; pop them into ``popped`` (nothing once
        closing). Returns the room there was."""
        s = self._s
        while self._lifecycle.is_open:
            now = self._clock()
            room = s.cap + self._growth(now) - len(self._inflight)
            delay = self._mirror.pop_due(now, room, popped) if room > 0 else None
            if popped:
                return room
            self._wakeup.wait(s.poll if delay is None else min(delay, s.poll))
        return 0

    def _growth(self, now: float) -> int:
        """How far the batch may grow at ``now``: the claims this worker finished in the
        last ``AUTO_WAIT`` seconds at its recent rate, bounded by ``grow`` and by a tenth
        of the lease, so a grown batch starts long before its leases would matter even
        if the heartbeat stalled."""
        s = self._s
        if not s.grow:
            return 0
        finished = self._counters["claimed"] - len(self._inflight)
        then, before = self._seen
        if now - then >= AUTO_WAIT:
            self.rate = ((finished - before) / (now - then) + self.rate) / 2
            self._seen = (now, finished)
        return min(s.grow, int(self.rate * min(AUTO_WAIT, s.lease / 10)))

    def _retry_later(self, popped: list[Entry],
                     release: Callable[[], object] | None = None) -> None:
        """A round failed: log it, ``release`` what a failed claim may have leased, put
        its popped entries back and back off, so the thread lives on and never spins."""
        delay = self._backoff.failed()
        log.exception("claim failed; retrying in %.2f s", delay)
        if release is not None:
            self._counters.add("store_errors")
            guarded(release, "releasing the leases of a failed claim", self._counters)
        self._mirror.put_back(popped)
        self._wakeup.wait(0)  # takes the ring of that put: the backoff waits for others
        if self._lifecycle.is_open:
            self._wakeup.wait(delay)

    def _claim(self, popped: list[Entry], room: int) -> None:
        """Claim due rows up to the latest popped instant; re-check popped ones not won."""
        s = self._s
        store = self._store
        threshold = max(e.wall for e in popped)
        batch = batch_prefix(s.owner)
        sent = self._clock()
        try:
            claims = store.claim(threshold, room, s.owner, s.lease, self._routing.serves(),
                                 batch)
        except Exception:
            # Rows it leased before failing would otherwise wait a whole lease.
            self._retry_later(popped, lambda: store.release_batch(s.owner, batch))
            return
        self._backoff.succeeded()
        runs = self._inflight.claimed(claims, s.live_until(sent))
        self._mirror.drop_all([(c.task_id, c.version) for c in claims])
        self._counters.add_all({"claim_rounds": 1, "claimed": len(claims),
                                "reruns": sum(c.attempts > 1 for c in claims)})
        for run in runs:
            self._runs.start(*run)
        won = {(c.task_id, c.version) for c in claims}
        lost = [e.task_id for e in popped if (e.task_id, e.version) not in won]
        if lost:
            guarded(lambda: self._mirror.sync(store.rows(lost)), "re-reading unclaimed rows",
                    self._counters)
