"""A run that ended keeps its lease until its outcome is stored.

A run leaves the claims in flight when it ends, but its outcome may wait to be
written (the housekeeping thread is busy with a long re-read, or a write is
retried after a lost connection). If nothing renewed its lease meanwhile,
another worker would requeue the row once the lease lapsed and run it a second
time, and the first outcome would then be refused: a double run of a version
that had already finished. The heartbeat renews the leases of outcomes waiting
to be stored as well as those of the runs in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from pysched.durable import DurableScheduler, MemoryStore, Outcome

import support.durable as h

LEASE = 0.5  # real seconds: the heartbeat (a third of it) must run during the test


class HeldFinishStore(MemoryStore):
    """A memory store whose first outcome write waits for ``release``: the outcome of a
    finished run waits to be stored while the lease clock runs on."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.release = threading.Event()

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        if outcomes and not self.writing.is_set():
            self.writing.set()
            assert self.release.wait(30), "the test never released the write"
        return super().finish(outcomes)


def test_an_outcome_waiting_to_be_stored_keeps_its_lease() -> None:
    h.reset()
    store = HeldFinishStore()
    sched = DurableScheduler(store, max_workers=1, lease=LEASE, poll_interval=0.02,
                             resync_interval=1000.0)
    taken: list[str] = []
    stop = threading.Event()

    def other_worker() -> None:
        """Another node: requeues lapsed leases and claims what it finds (never runs it)."""
        while not stop.is_set():
            store.requeue_expired()
            taken.extend(c.task_id for c in store.claim(store.now(), 10, "other", 60.0))
            stop.wait(0.01)

    other = threading.Thread(target=other_worker)
    try:
        sched.schedule("a", sched.clock(), 0, h.note, ["ran"])
        h.wait_for(store.writing.is_set, what="the outcome's write")
        assert h.CALLS == [("a", "ran")]
        claimed_until = store.get("a")["lease_expires"]
        other.start()
        # Renewed past two whole leases after the claim's own expiry: the row stayed this
        # worker's all along, while another node looked for lapsed leases.
        h.wait_for(lambda: (store.get("a")["lease_expires"] or 0) > claimed_until + 2 * LEASE,
                   timeout=10 * LEASE, what="renewals of the waiting outcome's lease")
        assert taken == []
    finally:
        stop.set()
        store.release.set()
        if other.is_alive():
            other.join()
        assert sched.close(timeout=30)
    assert taken == []
    assert store.get("a")["state"] == "completed"
    assert sched.stats()["not_recorded"] == 0
    assert h.CALLS == [("a", "ran")]
