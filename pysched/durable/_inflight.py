"""Inflight: the claims this process holds a lease on, and the Futures of its versions.

Claims: lease token -> ``RunningTask``, from the claim until its run's outcome
is queued or it is handed back. The heartbeat renews them (``renew``); a
newer version or a cancel that reaches this process flags them
(``supersede``, ``request_cancel``), so one not yet started never starts.

Futures: task id -> version -> ``DurableFuture``, from ``schedule()`` until
settled by the run here (``finished``), by a row read elsewhere
(``supersede`` returns them), or failed at close (``close``).

One lock guards both. It is a leaf: nothing else is locked or called while it
is held. Store writes of new versions (``add_versions``) run outside it, so
writes from many threads reach the store together (where they share a commit),
each holding a ticket meanwhile. A claim waits for the tickets taken before
it was recorded (``claimed``): otherwise the claiming thread could claim, run
and finish a version before its Future exists. A write that ends after a newer
version of its id was registered gets its Future superseded at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterable, Sequence

from .._errors import SchedulerClosed
from ._futures import DurableFuture
from .store import Claim

__all__ = ["Inflight", "RunningTask", "lease_live"]


class RunningTask:
    """One claimed version while this process holds its lease.

    ``attempt`` counts the claims of this version (1 on the first run; more
    after a crash or an expired lease: at-least-once). ``cancel_requested``
    turns true when ``cancel(task_id)`` reaches this process while it runs;
    stopping is up to the running code. ``lease_lost`` turns true when the
    heartbeat finds that this run's lease is gone (this process was paused or
    starved for longer than the lease): another worker may run the version
    again, and this run's outcome will not be recorded. Changed only by its
    process's ``Inflight``.
    """

    __slots__ = ("_cancel_requested", "_lease_lost", "_live_until", "_superseded", "attempt",
                 "ref", "run_at", "task_id", "token", "version")

    def __init__(self, claim: Claim, live_until: float = float("inf")) -> None:
        self.task_id = claim.task_id
        self.version = claim.version
        self.attempt = claim.attempts
        self.run_at = claim.run_at  # wall-clock instant it was due
        self.ref = claim.ref  # its registered task name, for its events
        self.token = claim.token
        self._cancel_requested = False
        # A newer version reached this process after the claim: if it has not
        # started yet, it never starts.
        self._superseded = False
        # The local clock's reading before which the lease is known to be live: the
        # send time of the claim or of its latest renewal, plus the trusted part of
        # the lease. The run never starts at or after it.
        self._live_until = live_until
        self._lease_lost = False

    @property
    def cancel_requested(self) -> bool:
        """Whether ``cancel(task_id)`` reached this process while the version was claimed."""
        return self._cancel_requested

    @property
    def lease_lost(self) -> bool:
        """Whether a renewal found this run's lease gone."""
        return self._lease_lost

    @property
    def superseded(self) -> bool:
        """Whether a newer version of the task id reached this process after the claim."""
        return self._superseded

    def __repr__(self) -> str:
        return f"<RunningTask {self.task_id!r} v{self.version} attempt {self.attempt}>"


def lease_live(running: RunningTask, now: float) -> bool:
    """The start rule's lease half: ``running`` may start at ``now`` (its clock) only
    before the local deadline of its claim or latest renewal, and only if no renewal
    found its lease lost."""
    return not running._lease_lost and now < running._live_until


class Inflight:
    """The claims in flight here (by lease token) and the Futures of versions watched here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes_ended = threading.Condition(self._lock)
        self._runs: dict[str, RunningTask] = {}
        self._futures: dict[str, dict[int, DurableFuture]] = {}
        self._closed = False  # every Future was taken by close(): no new ones
        self._next_ticket = 0
        # Ticket of each write in flight -> the newest version of each id that writes
        # registered while it ran (to supersede its own older ones at once).
        self._writing: dict[int, dict[str, int]] = {}

    def __len__(self) -> int:
        """The claims in flight here."""
        return len(self._runs)

    # -- claims --------------------------------------------------------------------------------

    def hold(self, running: RunningTask) -> None:
        """Hold a claim (renewed by ``renew`` until ``release``)."""
        with self._lock:
            self._runs[running.token] = running

    def claimed(self, claims: Iterable[Claim], live_until: float
                ) -> list[tuple[RunningTask, Claim, DurableFuture | None]]:
        """Hold each of a batch of claims, trusted until ``live_until``: each with its
        run's record and its version's Future if one is watched here."""
        runs = []
        with self._lock:
            # Writes that started before now may have committed claimed versions: their
            # Futures must exist first. Later ones cannot have (the claim is done).
            taken = self._next_ticket
            self._writes_ended.wait_for(lambda: all(t >= taken for t in self._writing))
            for claim in claims:
                running = RunningTask(claim, live_until)
                self._runs[claim.token] = running
                future = self._futures.get(claim.task_id, {}).get(claim.version)
                runs.append((running, claim, future))
        return runs

    def release(self, token: str) -> bool:
        """Stop holding the claim of ``token``; whether it was held."""
        with self._lock:
            return self._runs.pop(token, None) is not None

    def finished(self, token: str, task_id: str, version: int, settled: bool) -> None:
        """A run ended (its outcome queued): stop holding its claim; with ``settled``,
        forget its version's Future too (the outcome settles it, never a row read)."""
        with self._lock:
            del self._runs[token]
            if settled:
                by_version = self._futures.get(task_id, {})
                by_version.pop(version, None)
                if not by_version:
                    self._futures.pop(task_id, None)

    def holds(self, token: str) -> bool:
        return token in self._runs

    def tokens(self) -> set[str]:
        with self._lock:
            return set(self._runs)

    def snapshot(self) -> dict[str, RunningTask]:
        """The claims held, by lease token, as of now."""
        with self._lock:
            return dict(self._runs)

    def running_versions(self) -> set[tuple[str, int]]:
        with self._lock:
            return {(r.task_id, r.version) for r in self._runs.values()}

    def request_cancel(self, task_id: str) -> list[str]:
        """Flag every claim of ``task_id`` here as cancelled; their lease tokens."""
        with self._lock:
            runs = [r for r in self._runs.values() if r.task_id == task_id]
            for run in runs:
                run._cancel_requested = True
        return [run.token for run in runs]

    def renew(self, send: Callable[[list[str]], Iterable[str]], clock: Callable[[], float],
              live_until: Callable[[float], float]) -> tuple[int, list[RunningTask]]:
        """Renew the leases held here with ``send(tokens)`` (the tokens it renewed): move
        the deadline of those renewed to ``live_until`` of the moment it was sent, flag
        those not renewed as lost. Only a claim still held has lost its lease: one
        released meanwhile ended, and its outcome may have released the lease. Returns
        how many were renewed, and the claims lost."""
        with self._lock:
            runs = [run for run in self._runs.values() if not run._lease_lost]
        if not runs:
            return 0, []
        sent = clock()
        renewed = set(send([run.token for run in runs]))
        until = live_until(sent)
        lost = []
        with self._lock:
            for run in runs:
                if run.token in renewed:
                    run._live_until = max(run._live_until, until)
                elif run.token in self._runs:
                    run._lease_lost = True
                    lost.append(run)
        return len(renewed), lost

    # -- Futures -------------------------------------------------------------------------------

    def add_versions(self, write: Callable[[], Sequence[tuple[str, int]]],
                     make: Callable[[str, int], DurableFuture]
                     ) -> tuple[list[DurableFuture], list[DurableFuture]]:
        """Store versions with ``write()`` (it returns their (task_id, version)) and make
        the Future of each with ``make``, before any claim of them is held here. Returns
        the new Futures and those of older versions they supersede (to cancel), its own
        among them where a newer version of its id was registered while it wrote.
        SchedulerClosed once closed, before anything is written."""
        with self._lock:
            if self._closed:
                raise SchedulerClosed("the durable scheduler is closed")
            ticket = self._next_ticket
            self._next_ticket += 1
            self._writing[ticket] = {}
        written: Sequence[tuple[str, int]] = ()
        try:
            written = write()
        finally:
            with self._lock:
                newer = self._writing.pop(ticket)
                futures, superseded = self._register(written, newer, make)
                self._writes_ended.notify_all()
        return futures, superseded

    def _register(self, written: Sequence[tuple[str, int]], newer: dict[str, int],
                  make: Callable[[str, int], DurableFuture]
                  ) -> tuple[list[DurableFuture], list[DurableFuture]]:
        """Lock held: the Futures of a write's versions, and those superseded."""
        futures: list[DurableFuture] = []
        superseded: list[DurableFuture] = []
        for task_id, version in written:
            superseded += self._supersede(task_id, version)
            future = make(task_id, version)
            futures.append(future)
            known = self._futures.setdefault(task_id, {})
            if newer.get(task_id, 0) > version or any(v > version for v in known):
                superseded.append(future)  # replaced while it was being written
                continue
            known[version] = future
            for others in self._writing.values():  # writes in flight learn of it
                if others.get(task_id, 0) < version:
                    others[task_id] = version
        return futures, superseded

    def supersede(self, task_id: str, version: int) -> list[DurableFuture]:
        """Take out the Futures of versions older than ``version`` not running here, and
        flag older claims here so that one not yet started never starts."""
        with self._lock:
            return self._supersede(task_id, version)

    def supersede_all(self, versions: Sequence[tuple[str, int]]) -> list[list[DurableFuture]]:
        """``supersede`` each (task_id, version) of a batch (rows read, say): the Futures
        taken out for each, in order. One pass over the claims, not one per item."""
        with self._lock:
            claims: dict[str, list[RunningTask]] = {}
            for run in self._runs.values():
                claims.setdefault(run.task_id, []).append(run)
            return [self._supersede(task_id, version, claims.get(task_id, ()))
                    for task_id, version in versions]

    def _supersede(self, task_id: str, version: int,
                   claims: Iterable[RunningTask] | None = None) -> list[DurableFuture]:
        """Lock held; ``claims``: those of ``task_id`` here, if the caller knows them."""
        running = set()
        for run in self._runs.values() if claims is None else claims:
            if run.task_id == task_id:
                if run.version < version:
                    run._superseded = True
                running.add(run.version)
        futures = self._futures.get(task_id)
        if not futures:
            return []
        old = [v for v in futures if v < version and v not in running]
        return [futures.pop(v) for v in old]

    def watched(self, elsewhere: Container[str], among: Iterable[str] | None = None
                ) -> list[str]:
        """The task ids of Futures whose versions neither run here nor are in ``elsewhere``
        (pending in the local heap): their rows say how they ended. With ``among``, only
        those of these ids (O(len(among)), not O(Futures))."""
        with self._lock:
            running = {r.task_id for r in self._runs.values()}
            ids = self._futures if among is None else among
            futures = self._futures
            return [i for i in ids if i in futures and i not in elsewhere and i not in running]

    def watch_count(self) -> int:
        """How many task ids have a Future here."""
        return len(self._futures)

    def close(self) -> list[DurableFuture]:
        """Take every Future left (their versions did not finish here); no new ones.
        Waits for the writes in flight to register theirs."""
        with self._lock:
            self._closed = True
            self._writes_ended.wait_for(lambda: not self._writing)
            futures = [f for by_version in self._futures.values() for f in by_version.values()]
            self._futures.clear()
        return futures
