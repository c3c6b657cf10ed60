"""A run stopped because its pool is closing goes back to the store, for another worker.

The worker command's second signal closes its pool with ``cancel_running``:
each running task's token says "closed". A task that answers by raising
TaskCancelled("closed") has not failed; its version is handed back pending,
its lease released and its attempt given back, on every store.
"""

from __future__ import annotations

from typing import Any

import pytest

import pysched
from pysched import ThreadPoolScheduler
from pysched.durable import Retry, TaskRegistry

import support.durable as h

HANG_GUARD = 30.0


def stop_when_closed(started: str, release: str) -> str:
    """Set ``started``; return once ``release`` is set, raise TaskCancelled once the token is."""
    token = pysched.current_token()
    h.event(started).set()
    for _ in range(int(HANG_GUARD / 0.01)):
        if h.event(release).wait(0.01):
            return "done"
        token.raise_if_cancelled()
    raise AssertionError("neither released nor cancelled")


def raise_closed() -> None:
    """Raises the closing exception with nothing closing: a failure like any other."""
    raise pysched.TaskCancelled("closed")


def registry() -> TaskRegistry:
    # A retry policy that would retry: the hand-back must bypass it, not consume it.
    r = TaskRegistry()
    r.register(stop_when_closed, "stop-when-closed", retry=Retry(3, backoff=0.0))
    r.register(raise_closed, "raise-closed")
    return r


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:
    yield from h.schedulers(store_spec)


def test_a_run_stopped_by_its_pool_closing_is_handed_back_and_another_worker_runs_it(
        make: Any) -> None:
    pool = ThreadPoolScheduler(2)
    first = make(registry=registry(), executor=pool, max_workers=2)
    first.schedule("a", first.clock(), 0, stop_when_closed, args=["hb-started", "hb-release"])
    assert h.event("hb-started").wait(HANG_GUARD)
    first.close(wait=False)
    pool.close(wait=False, cancel_running=True)  # what the worker command's second signal does
    assert first.close(timeout=HANG_GUARD)
    row = first.store.get("a")  # the store stays open: it was given to the scheduler
    assert row is not None
    assert (row["state"], row["attempts"], row["lease_owner"], row["error"]) == (
        "pending", 0, None, None)
    stats = first.stats()
    assert (stats["stopped_by_close"], stats["handed_back"]) == (1, 1)
    assert (stats["failed"], stats["retried"]) == (0, 0)

    h.event("hb-release").set()
    second = make(registry=registry())
    h.wait_for(lambda: second.row("a")["state"] == "completed", HANG_GUARD, "the run elsewhere")
    assert second.row("a")["attempts"] == 1  # the stopped run consumed no attempt


def test_a_task_raising_the_closing_exception_while_nothing_closes_fails(make: Any) -> None:
    s = make(registry=registry())
    with pytest.raises(pysched.TaskCancelled):
        s.schedule("b", s.clock(), 0, raise_closed).result(HANG_GUARD)
    h.wait_for(lambda: s.row("b")["state"] == "failed", HANG_GUARD, "the failure stored")
    assert s.stats()["stopped_by_close"] == 0
