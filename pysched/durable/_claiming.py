"""Claiming: wait for the local head, claim a batch of due rows, hand it to the runs.

At most ``cap`` (max_workers + prefetch) claimed versions are in flight here.
A claim that fails is retried with backoff; the entries it popped go back on
the local heap. The store, not the heap, decides what is claimed, so a stale
entry costs one claim that finds nothing.
"""

from __future__ import annotations

from ._local import RunningTask
from ._mirror import Entry, Mirror
from ._running import Runs
from ._shared import OPEN, Backoff, Shared, log

__all__ = ["Claimer"]


class Claimer:
    """The claiming thread's loop (``run``)."""

    def __init__(self, shared: Shared, mirror: Mirror, runs: Runs) -> None:
        self._s = shared
        self._mirror = mirror
        self._runs = runs
        self._backoff = Backoff(shared.poll, max(shared.poll, 5.0))

    def run(self) -> None:
        s = self._s
        try:
            while True:
                with s.lock:
                    popped: list[Entry] = []
                    while True:
                        if s.state != OPEN:
                            return
                        room = s.cap - len(s.inflight)
                        delay = self._mirror.pop_due(room, popped) if room > 0 else None
                        if popped:
                            break
                        s.wake.wait(s.poll if delay is None else min(delay, s.poll))
                self._claim(popped, room)
        finally:
            self._runs.close_pool()
            with s.lock:
                s.dispatching = False
                s.chores.notify_all()

    def _claim(self, popped: list[Entry], room: int) -> None:
        """Claim due rows up to the latest popped instant; re-check popped ones not won."""
        s = self._s
        threshold = max(e.wall for e in popped)
        try:
            claims = s.store.claim(threshold, room, s.owner, s.lease, s.serves())
        except Exception:
            delay = self._backoff.failed()
            log.exception("claim failed; retrying in %.2f s", delay)
            with s.lock:
                s.counts["store_errors"] += 1
                for e in popped:
                    self._mirror.put(e.task_id, e.version, e.wall, e.priority)
                s.wake.wait(delay)
            return
        self._backoff.succeeded()
        runs = []
        with s.lock:
            s.counts["claim_rounds"] += 1
            for claim in claims:
                running = RunningTask(s.scheduler, claim)
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
