"""Edges of pysched.sched, ThreadSafeBoundedPriorityQueue and the ``pysched`` command.

Each test pins a contract the other suites leave open: a rejected call
leaves the structure as it was, a finite timeout is a timeout, and a bad
command-line argument is a usage error (status 2) naming the option, never a
traceback or a store failure.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import pysched.sched
from pysched.bounded import ThreadSafeBoundedPriorityQueue

JOIN = 30.0  # seconds: only a deadlock or a lost wakeup gets near it


@pytest.fixture
def sched_cls(impl: Any) -> type[pysched.sched.scheduler]:
    """pysched.sched.scheduler on the core that ``impl`` names."""
    return type("scheduler", (pysched.sched.scheduler,), {"_core_factory": impl.Scheduler})


# -- pysched.sched ------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    pytest.param(("late", 0), id="time"),
    pytest.param((1, "low"), id="priority"),
])
@pytest.mark.parametrize("queued", [1, 7], ids=["one-queued", "several-queued"])
def test_an_incomparable_event_is_refused_and_leaves_the_queue_usable(
        sched_cls: type[pysched.sched.scheduler], bad: tuple[Any, Any], queued: int) -> None:
    ran: list[Any] = []
    s = sched_cls(timefunc=lambda: 10, delayfunc=lambda seconds: None)
    for n in range(queued):
        s.enterabs(1, n, ran.append, (n,))
    before = s.queue
    with pytest.raises(TypeError):
        s.enterabs(*bad, ran.append, ("bad",))
    assert s.queue == before
    # Only comparable events are queued, so later ones enter and run in order.
    s.enterabs(2, 0, ran.append, ("later",))
    s.enterabs(0, 0, ran.append, ("first",))
    assert s.run(blocking=False) is None
    assert ran == ["first", *range(queued), "later"] and s.empty()


# -- ThreadSafeBoundedPriorityQueue ---------------------------------------------------------

@pytest.mark.parametrize("timeout", [threading.TIMEOUT_MAX * 2, 1e300])
def test_get_with_a_timeout_beyond_the_platform_limit_waits_for_a_push(
        impl: Any, timeout: float) -> None:
    q = ThreadSafeBoundedPriorityQueue(2, queue_type=impl.StableBoundedPriorityQueue)
    got: list[Any] = []
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            got.append(q.get(timeout=timeout))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    deadline = time.monotonic() + JOIN
    while q.stats()["waiting"] < 1 and consumer.is_alive():
        assert time.monotonic() < deadline, "the consumer never started waiting"
        time.sleep(0.001)
    q.push(1, "x")
    consumer.join(JOIN)
    assert not consumer.is_alive()
    assert errors == [] and got == ["x"]
    assert q.stats()["waiting"] == 0
