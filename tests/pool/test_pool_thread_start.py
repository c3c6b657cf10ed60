"""When a ThreadPoolScheduler starts its threads, how many, and what one that cannot start does.

Workers start as work needs them, as ThreadPoolExecutor's do: none before the
first schedule, then one whenever pending work outnumbers the workers free to
take it. ``limited`` makes the pool's threads fail to start after a number of
starts, as the system does when it has no more threads to give.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pysched import TaskTimeout, ThreadPoolScheduler, current_token
from pysched.testing import FakeClock

WAIT = 20.0
PREFIX = "limited"


def pool_threads(kind: str = "") -> list[threading.Thread]:
    """The live threads of the pools made here; ``kind``: "worker" or "dispatcher"."""
    return [t for t in threading.enumerate() if t.name.startswith(f"{PREFIX}-{kind}")]


class StartLimit:
    """Thread.start for this module's pool threads fails once ``allowed`` of them started."""

    def __init__(self) -> None:
        self.allowed: int | None = None  # None: no limit
        self.started = 0
        self.on_refusal: Callable[[], object] = lambda: None  # called as a start fails
        # refuses some threads, however many started
        self.refuse: Callable[[threading.Thread], bool] = lambda thread: False
        self.pools: list[ThreadPoolScheduler] = []  # closed at the end of the test

    def make(self, impl: Any, max_workers: int, **options: Any) -> ThreadPoolScheduler:
        pool = ThreadPoolScheduler(max_workers, thread_name_prefix=PREFIX,
                                   _core_factory=impl.Scheduler, **options)
        self.pools.append(pool)
        return pool


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> Iterator[StartLimit]:
    limit = StartLimit()
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if thread.name.startswith(PREFIX):
            if limit.refuse(thread) or (limit.allowed is not None
                                        and limit.started >= limit.allowed):
                limit.on_refusal()
                raise RuntimeError("can't start new thread")
            limit.started += 1
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    yield limit
    for pool in limit.pools:
        pool.close(wait=False, cancel_running=True)
    deadline = time.monotonic() + WAIT
    for thread in pool_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    assert pool_threads() == [], "a pool thread outlived its test"



def test_no_thread_starts_before_the_first_schedule(impl, limited):
    pool = limited.make(impl, 200)
    assert pool_threads() == [] and limited.started == 0
    assert pool.close(wait=True) and pool.state == "closed"
    assert limited.started == 0


@pytest.mark.parametrize("end", ["close", "shutdown", "with", "unreferenced"])
def test_a_pool_that_never_ran_anything_closes_at_once(impl, limited, end):
    pool = ThreadPoolScheduler(4, thread_name_prefix=PREFIX, _core_factory=impl.Scheduler)
    if end == "close":
        assert pool.close(wait=False) and pool.state == "closed"
    elif end == "shutdown":
        pool.shutdown(wait=True)
        assert pool.state == "closed"
    elif end == "with":
        with pool:
            pass
        assert pool.state == "closed"
    else:
        book = pool._book
        del pool
        assert book.state == "closed"
    assert limited.started == 0


def test_work_done_one_at_a_time_reuses_one_worker(impl, limited):
    # CPython's test_idle_thread_reuse, counting workers
    pool = limited.make(impl, 8)
    for n in range(3):
        assert pool.submit(abs, -n).result(WAIT) == n
    assert len(pool_threads("worker")) == 1 and len(pool_threads("dispatcher")) == 1
    pool.close()


@pytest.mark.parametrize("blocked", [3, 60])
def test_blocked_work_starts_a_worker_each_up_to_max_workers(impl, limited, blocked):
    # CPython's test_threads_terminate (3) and test_saturation (15 x max_workers)
    pool = limited.make(impl, 4)
    release = threading.Semaphore(0)
    futures = [pool.submit(release.acquire) for _ in range(blocked)]
    assert len(pool_threads("worker")) == min(blocked, 4)
    for _ in range(blocked):
        release.release()
    assert all(f.result(WAIT) for f in futures)
    pool.close()
    assert limited.started == min(blocked, 4) + 1  # and the dispatcher


def test_work_due_later_runs_on_as_many_threads_at_once(impl, limited):
    clock = FakeClock()
    pool = limited.make(impl, 5, clock=clock)
    together = threading.Barrier(5, timeout=WAIT)  # broken unless all five run at once
    futures = [pool.schedule(n, 10.0, 0, together.wait) for n in range(5)]
    assert len(pool_threads("worker")) == 5
    clock.wait_for_sleeper(10.0)
    clock.advance(10.0)
    assert sorted(f.result(WAIT) for f in futures) == [0, 1, 2, 3, 4]
    pool.close()


def test_max_workers_above_the_bound_is_refused_by_name(impl, limited):
    from pysched.pool.scheduler import MAX_WORKERS

    # Without a bound a pool started threads until the system refused one (22,215
    # here, in 28 s): the limit keeps a build without the bound from doing that.
    limited.allowed = 50
    for too_many in (MAX_WORKERS + 1, 10**9):
        with pytest.raises(ValueError, match=f"max_workers must be at most {MAX_WORKERS}"):
            limited.make(impl, too_many)
    pool = limited.make(impl, MAX_WORKERS)
    assert pool.submit(abs, -3).result(WAIT) == 3
    pool.close()
    assert limited.started == 2


def test_no_thread_at_all_refuses_the_first_schedule_and_changes_nothing(impl, limited):
    limited.allowed = 0
    pool = limited.make(impl, 4)
    with pytest.raises(RuntimeError, match="cannot start the scheduler's first worker thread"):
        pool.submit(abs, -1)
    with pytest.raises(RuntimeError, match="first worker thread"):
        pool.schedule("job", 0.0, 0, abs, (-1,))
    assert pool_threads() == []
    assert pool.state == "open" and pool.stats()["scheduled"] == 0
    limited.allowed = None  # the system has threads again: the pool works
    assert pool.schedule("job", 0.0, 0, abs, (-2,)).result(WAIT) == 2
    assert pool.close(wait=True)


def test_a_worker_without_its_dispatcher_closes_the_pool(impl, limited):
    limited.allowed = 1  # the first worker starts, the dispatcher does not
    pool = limited.make(impl, 4)
    with pytest.raises(RuntimeError, match="dispatcher thread.*the scheduler is closed"):
        pool.submit(abs, -1)
    assert pool.state == "closed" and pool_threads() == []
    assert pool.stats()["scheduled"] == 0


def test_a_worker_that_cannot_start_leaves_the_pool_running_on_those_it_has(
        impl, limited, caplog):
    limited.allowed = 2  # the first worker and the dispatcher
    pool = limited.make(impl, 4)
    release = threading.Event()
    with caplog.at_level(logging.WARNING, logger="pysched"):
        futures = [pool.submit(release.wait, WAIT) for _ in range(6)]
        more = pool.schedule("later", 0.0, 0, abs, (-7,))
    # One warning: the pool tries no more once the system refused a thread.
    [warning] = [r.message for r in caplog.records if r.levelno == logging.WARNING]
    assert "cannot start another worker thread" in warning and "the 1 it has" in warning
    assert len(pool_threads("worker")) == 1
    release.set()
    assert all(f.result(WAIT) for f in futures) and more.result(WAIT) == 7
    stats = pool.stats()
    assert (stats["completed"], stats["peak_running"]) == (7, 1)
    assert pool.close(wait=True)
    assert limited.started == 2


def test_a_worker_refused_while_the_pool_closes_lets_it_close(impl, limited):
    limited.allowed = 2
    pool = limited.make(impl, 3)
    started, release = threading.Event(), threading.Event()

    def blocker() -> str:
        started.set()
        release.wait(WAIT)
        return "ran"

    first = pool.submit(blocker)
    assert started.wait(WAIT)
    limited.on_refusal = lambda: pool.close(wait=False)  # the close comes as a start fails
    second = pool.submit(blocker)  # wants a second worker, which cannot start
    assert second.cancelled() and pool.state == "closing"
    release.set()
    assert first.result(WAIT) == "ran"
    assert pool.close(wait=True) and pool.state == "closed"


def test_timeout_callbacks_without_a_thread_of_their_own_still_run(impl, limited, caplog):
    # The dispatcher runs timeout callbacks on a thread of their own; when none can start
    # it runs them itself rather than die with them (which closed the pool, callbacks lost).
    clock = FakeClock()
    pool = limited.make(impl, 2, clock=clock)
    started, ran = threading.Event(), threading.Event()
    limited.refuse = lambda thread: thread.name.endswith("-timeout-callbacks")

    def body() -> str:
        token = current_token()
        token.add_callback(lambda: ran.set())
        started.set()
        token.wait(WAIT)
        return "stopped"

    fut = pool.schedule("slow", 0.0, 0, body, timeout=1.0)
    assert started.wait(WAIT)
    with caplog.at_level(logging.WARNING, logger="pysched"):
        clock.advance(1.0)
        assert ran.wait(WAIT)
        with pytest.raises(TaskTimeout):
            fut.result(WAIT)
    assert any("timeout callbacks" in r.message for r in caplog.records)
    assert pool.state == "open" and pool.submit(abs, -4).result(WAIT) == 4
    assert pool.close(wait=True)
