"""What one DurableScheduler was started with: fixed for its life, read by every job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .registry import TaskRegistry
from .store import Serves

__all__ = ["Routing", "Settings"]


@dataclass(frozen=True)
class Settings:
    """The checked arguments of one DurableScheduler (durations in seconds)."""

    owner: str  # this process's name in leases
    lease: float
    beat: float  # the heartbeat's period, shorter than ``lease``
    poll: float
    resync_every: float
    max_skew: float
    cap: int  # claimed versions in flight here at most (0: a producer only)
    grow: int  # at most this many more while the run rate keeps them short-lived
    retention: float | None  # seconds finished rows are kept; None: for ever
    retention_batch: int  # finished rows deleted per transaction at most
    stale_after: float  # due this long and unclaimed: reported in stats()

    @property
    def trusted(self) -> float:
        """How long after its claim or renewal was sent a lease is trusted here: up to
        halfway between the next renewal's due time and its expiry (the margin absorbs
        a late renewal, clocks that drift apart, and the moment between the start
        check and the call), and no longer than two heartbeats, after which a restart
        under the same owner takes this process for dead and releases the lease."""
        return min(self.lease - (self.lease - self.beat) / 2, 2 * self.beat)

    def live_until(self, sent: float) -> float:
        """The local deadline of a lease set or renewed by a statement sent at ``sent``
        (on ``clock``): the database set its expiry after the statement arrived, so
        it expires no sooner than ``sent + lease`` on any clock that runs at our rate."""
        return sent + self.trusted


@dataclass(frozen=True)
class Routing:
    """Which rows this worker takes: the task names its ``registry`` knows, in ``queues``
    (None: every queue); a producer (``claims`` False) takes none."""

    registry: TaskRegistry
    queues: tuple[str, ...] | None
    claims: bool

    def serves(self) -> Serves:
        """What this worker claims: read per claim, as tasks may be registered later."""
        return self.registry.serves(self.queues)

    def served(self) -> Callable[[str, str], bool]:
        """``served(ref, queue)``: whether a row belongs in the local heap, because this
        worker serves it (a store that does not report a row's ref, "", is taken to
        serve everything). Build it once per batch of rows: O(1) per row after."""
        if not self.claims:
            return lambda ref, queue: False
        matches = self.serves().matcher()
        return lambda ref, queue: ref == "" or matches(ref, queue)
