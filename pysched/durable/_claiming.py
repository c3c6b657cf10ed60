"""Claiming: wait for the local head, claim a batch of due rows, hand it to the runs.

At most ``cap`` (max_workers + prefetch) claimed versions are in flight here,
plus, when no prefetch was given, up to ``grow`` more: as many as this worker
has recently been finishing in ``AUTO_WAIT`` seconds (and in a tenth of the
lease), so a backlog of short tasks is claimed in larger batches, one commit
each, while a claimed row still waits only a moment for a thread: long tasks
keep the batch at max_workers + prefetch and leave the rest to other workers.
A claim that fails, or a round whose clock reading raised, is retried with
backoff; the entries it popped go back on the local heap, and the leases it
may have taken before it failed (the database committed, then the answer was
lost or could not be read) are released at once by its batch prefix instead
of lapsing a lease later. The store, not the heap, decides what is claimed,
so a stale entry costs one claim that finds nothing.

Each claim's lease is trusted here until ``Shared.live_until`` of the moment
the claim statement was sent: the runs check it before they start.
"""

from __future__ import annotations

from collections.abc import Callable

from ._local import RunningTask
from ._mirror import Entry, Mirror
from ._running import Runs
from ._shared import OPEN, Backoff, Shared, log
from .store import batch_prefix

__all__ = ["AUTO_PREFETCH_MAX", "AUTO_WAIT", "Claimer"]

AUTO_PREFETCH_MAX = 256  # claims beyond max_workers + prefetch, at most
AUTO_WAIT = 0.1  # seconds of this worker's recent finishing rate a batch may hold unstarted


class Claimer:
    """The claiming thread's loop (``run``)."""

    def __init__(self, shared: Shared, mirror: Mirror, runs: Runs) -> None:
        self._s = shared
        self._mirror = mirror
        self._runs = runs
        self._backoff = Backoff(shared.poll, max(shared.poll, 5.0))
        self.rate = 0.0  # claims finished per second of ``clock``, smoothed over claim rounds
        self._seen = (shared.clock(), 0)  # (clock, claims finished) at the last measure

    def run(self) -> None:
        s = self._s
        try:
            while True:
                popped: list[Entry] = []
                try:
                    with s.lock:
                        while True:
                            if s.state != OPEN:
                                return
                            room = s.cap + self._growth() - len(s.inflight)
                            delay = self._mirror.pop_due(room, popped) if room > 0 else None
                            if popped:
                                break
                            s.wake.wait(s.poll if delay is None else min(delay, s.poll))
                    self._claim(popped, room)
                except Exception:  # a clock reading raised: this round claims nothing
                    self._retry_later(popped, "claiming")
        finally:
            self._runs.close_pool()
            with s.lock:
                s.dispatching = False
                s.chores.notify_all()

    def _growth(self) -> int:
        """How far the batch may grow now (the caller holds the lock): the claims this
        worker finished in the last ``AUTO_WAIT`` seconds at its recent rate, bounded by
        ``grow`` and by a tenth of the lease, so a grown batch starts long before its
        leases would matter even if the heartbeat stalled."""
        s = self._s
        if not s.grow:
            return 0
        now, finished = s.clock(), s.counts["claimed"] - len(s.inflight)
        then, before = self._seen
        if now - then >= AUTO_WAIT:
            self.rate = ((finished - before) / (now - then) + self.rate) / 2
            self._seen = (now, finished)
        return min(s.grow, int(self.rate * min(AUTO_WAIT, s.lease / 10)))

    def _retry_later(self, popped: list[Entry], what: str,
                     release: Callable[[], object] | None = None) -> None:
        """A round failed (a store call, or a clock reading, raised): log it, ``release``
        what it may have leased, put its popped entries back and back off, so the thread
        lives on and never spins."""
        s = self._s
        delay = self._backoff.failed()
        log.exception("%s failed; retrying in %.2f s", what, delay)
        if release is not None:
            s.guarded(release, "releasing the leases of a failed claim")
        with s.lock:
            if release is not None:  # the store failed, not the clock
                s.counts["store_errors"] += 1
            for e in popped:
                self._mirror.put(e.task_id, e.version, e.wall, e.priority)
            if s.state == OPEN:
                s.wake.wait(delay)

    def _claim(self, popped: list[Entry], room: int) -> None:
        """Claim due rows up to the latest popped instant; re-check popped ones not won."""
        s = self._s
        threshold = max(e.wall for e in popped)
        batch = batch_prefix(s.owner)
        sent = s.clock()
        try:
            claims = s.store.claim(threshold, room, s.owner, s.lease, s.serves(), batch)
        except Exception:
            # Rows it leased before failing would otherwise wait a whole lease.
            self._retry_later(popped, "claim",
                              lambda: s.store.release_batch(s.owner, batch))
            return
        self._backoff.succeeded()
        runs = []
        with s.lock:
            s.counts["claim_rounds"] += 1
            for claim in claims:
                running = RunningTask(s.scheduler, claim, s.live_until(sent))
                s.inflight[claim.token] = running
                self._mirror.drop(claim.task_id, claim.version)
                future = s.futures.get(claim.task_id, {}).get(claim.version)
                runs.append((running, claim, future))
            s.counts["claimed"] += len(claims)
            s.counts["reruns"] += sum(c.attempts > 1 for c in claims)
        for run in runs:
            self._runs.start(*run)
        won = {(c.task_id, c.version) for c in claims}
        lost = [e.task_id for e in popped if (e.task_id, e.version) not in won]
        if lost:
            s.guarded(lambda: self._mirror.sync(s.store.rows(lost)), "re-reading unclaimed rows")
