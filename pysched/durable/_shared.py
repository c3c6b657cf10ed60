"""What the jobs of one DurableScheduler share: the lock, the store, the runs in flight.

Each job (mirror, claiming, running, outcomes, heartbeat, housekeeping,
listening) is a small object holding this one; none holds another's lock.
Lock order: ``lock`` is never held across a user callable or a Future
callback, and across one store call only (the write in ``schedule_many``);
no thread inside a store call waits for ``lock``.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from .._impl import Scheduler
from ._futures import DurableFuture
from ._local import RunningTask
from .registry import TaskRegistry
from .store import Outcome, Serves, Store
from .timebase import Timebase

log = logging.getLogger("pysched.durable")

OPEN, CLOSING, CLOSED = "open", "closing", "closed"

COUNTERS = ("claimed", "reruns", "completed", "failed", "errors", "retried", "not_recorded",
            "handed_back", "not_started", "lease_lapsed", "leases_lost", "stopped_by_close",
            "claim_rounds", "resyncs", "resyncs_skipped", "bad_rows", "store_errors", "repaired",
            "skew_refusals", "pruned")

__all__ = ["CLOSED", "CLOSING", "COUNTERS", "OPEN", "Backoff", "Shared", "log"]


class Shared:
    """The state every job of one scheduler reads and writes under ``lock``."""

    def __init__(self, *, store: Store, owner: str, registry: TaskRegistry, lease: float,
                 beat: float, poll: float, resync_every: float, max_skew: float,
                 cap: int, clock: Callable[[], float], timebase: Timebase, grow: int = 0,
                 queues: tuple[str, ...] | None = None, retention: float | None = None,
                 stale_after: float = 300.0) -> None:
        self.store = store
        self.owner = owner
        self.registry = registry
        self.lease = lease
        self.beat = beat
        # How long after its claim or renewal was sent a lease is trusted here: up to
        # halfway between the next renewal's due time and its expiry (the margin absorbs
        # a late renewal, clocks that drift apart, and the moment between the start
        # check and the call), and no longer than two heartbeats, after which a restart
        # under the same owner takes this process for dead and releases the lease.
        self.trusted = min(lease - (lease - beat) / 2, 2 * beat)
        self.poll = poll
        self.resync_every = resync_every
        self.max_skew = max_skew
        self.cap = cap  # claimed versions in flight here at most (0: a producer only)
        self.grow = grow  # at most this many more while the run rate keeps them short-lived
        self.queues = queues  # served here; None: every queue
        self.retention = retention  # seconds finished rows are kept; None: for ever
        self.stale_after = stale_after  # due this long and unclaimed: reported in stats()
        self.unclaimed: tuple[int, float | None] = (0, None)  # as of the last resync
        self.clock = clock
        self.timebase = timebase
        self.core = Scheduler(clock=clock)  # the local heap: when to claim
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)  # claimer: head, room or state changed
        self.chores = threading.Condition(self.lock)  # housekeeper: outcomes or closing
        self.heart = threading.Condition(self.lock)  # heartbeat: closed
        self.closing = threading.Event()  # set when close() begins: ends backoff waits
        self.state = OPEN
        self.dispatching = True  # until the claimer thread has exited
        self.inflight: dict[str, RunningTask] = {}  # lease token -> claimed, not finished
        self.outcomes: list[tuple[Outcome, DurableFuture | None, Any]] = []
        self.futures: dict[str, dict[int, DurableFuture]] = {}
        self.counts = dict.fromkeys(COUNTERS, 0)
        # The DurableScheduler these jobs belong to, as current_task() reports it.
        self.scheduler: object = None

    def supersede(self, task_id: str, version: int) -> list[DurableFuture]:
        """Take out the Futures of versions older than ``version`` not running here, and
        flag older claimed versions here so that one not yet started never starts. Lock held."""
        running = set()
        for run in self.inflight.values():
            if run.task_id == task_id:
                if run.version < version:
                    run.superseded = True
                running.add(run.version)
        futures = self.futures.get(task_id)
        if not futures:
            return []
        old = [v for v in futures if v < version and v not in running]
        return [futures.pop(v) for v in old]

    def live_until(self, sent: float) -> float:
        """The local deadline of a lease set or renewed by a statement sent at ``sent``
        (on ``clock``): the database set its expiry after the statement arrived, so
        it expires no sooner than ``sent + lease`` on any clock that runs at our rate."""
        return sent + self.trusted

    def serves(self) -> Serves:
        """What this worker claims: read per claim, as tasks may be registered later."""
        return self.registry.serves(self.queues)

    def served(self) -> Callable[[str, str], bool]:
        """``served(ref, queue)``: whether a row belongs in the local heap, because this
        worker serves it (a store that does not report a row's ref, "", is taken to
        serve everything). Build it once per batch of rows: O(1) per row after."""
        if self.cap == 0:
            return lambda ref, queue: False
        matches = self.serves().matcher()
        return lambda ref, queue: ref == "" or matches(ref, queue)

    def guarded(self, action: Callable[[], object], what: str) -> bool:
        """Run a store chore; log and count a failure instead of ending the thread."""
        try:
            action()
        except Exception:
            log.exception("durable store: %s failed", what)
            with self.lock:
                self.counts["store_errors"] += 1
            return False
        return True


class Backoff:
    """Exponential backoff with full jitter between ``base`` and ``cap`` seconds."""

    def __init__(self, base: float, cap: float) -> None:
        self.base = base
        self.cap = max(cap, base)
        self.failures = 0

    def failed(self) -> float:
        """Record a failure; the delay before the next try."""
        self.failures += 1
        ceiling = min(self.cap, self.base * 2 ** min(self.failures - 1, 30))
        return random.uniform(ceiling / 2, ceiling)

    def succeeded(self) -> None:
        self.failures = 0
