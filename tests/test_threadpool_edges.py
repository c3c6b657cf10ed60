"""ThreadPoolScheduler at its edges: user code that raises BaseExceptions or re-enters.

Each test pins a contract of the README and docs/ that the other
test_threadpool*.py modules do not reach: no Future is left unresolved and no
callback is skipped when another party's callback raises a BaseException.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import threading

import pytest
from pool_helpers import WAIT, Gate, clock_fixture, make_pool_fixture  # noqa: F401

from pysched import current_token
from pysched.testing import FakeClock


class Interrupt(BaseException):
    """A BaseException of the user's, as KeyboardInterrupt arriving in a callback is."""


def _interrupt(*_: object) -> None:
    raise Interrupt("raised by a user callback")


@pytest.mark.parametrize("how", ["close", "shutdown_cancel_futures"])
def test_a_done_callback_raising_during_close_leaves_no_future_pending(make_pool, how):
    pool = make_pool(1)
    first = pool.schedule("first", 10.0, 0, print)
    second = pool.schedule("second", 10.0, 0, print)
    third = pool.schedule("third", 10.0, 0, print)
    second.add_done_callback(_interrupt)
    with pytest.raises(Interrupt):
        if how == "close":
            pool.close(wait=False)
        else:
            pool.shutdown(wait=False, cancel_futures=True)
    for fut in (first, second, third):
        assert fut.done(), fut
        assert fut.cancelled() and fut.cancel_reason == "closed"
    assert pool.close(wait=True, timeout=WAIT)


def test_a_done_callback_raising_during_close_still_sets_the_running_tokens(make_pool):
    pool = make_pool(1)
    stopped = threading.Event()

    def body():
        current_token().add_callback(stopped.set)
        started.set()
        assert stopped.wait(WAIT)

    started = threading.Event()
    running = pool.submit(body)
    assert started.wait(WAIT)
    pending = pool.schedule("later", 10.0, 0, print)
    pending.add_done_callback(_interrupt)
    with pytest.raises(Interrupt):
        pool.close(wait=False, cancel_running=True)
    assert stopped.is_set(), "the running task's cancel callback was skipped"
    assert running.result(WAIT) is None


def test_a_cancel_callback_raising_a_base_exception_skips_no_other_callback(make_pool):
    pool = make_pool(1)
    seen = []
    started = threading.Event()

    def body():
        token = current_token()
        token.add_callback(_interrupt)
        token.add_callback(lambda: seen.append("second"))
        started.set()
        assert token.wait(WAIT)

    fut = pool.schedule("t", 0.0, 0, body)
    assert started.wait(WAIT)
    with pytest.raises(Interrupt):
        pool.cancel("t")
    assert seen == ["second"]
    assert fut.result(WAIT) is None


def test_a_done_callback_raising_in_cancel_still_runs_the_running_versions_callbacks(make_pool):
    pool = make_pool(1)
    stopped = threading.Event()
    started = threading.Event()

    def body():
        current_token().add_callback(stopped.set)
        started.set()
        assert stopped.wait(WAIT)

    running = pool.schedule("t", 0.0, 0, body)
    assert started.wait(WAIT)
    newer = pool.schedule("t", 0.0, 0, print)  # waits for the running version
    newer.add_done_callback(_interrupt)
    with pytest.raises(Interrupt):
        pool.cancel("t")
    assert newer.cancelled() and newer.cancel_reason == "cancelled"
    assert stopped.is_set(), "the running version's cancel callback was skipped"
    assert running.result(WAIT) is None


def test_cancelling_a_series_as_its_failing_run_ends_it_keeps_the_failure(make_pool, clock):
    # A run fails and ends its series (on_error="stop"); its worker has left the
    # book and is about to fail the series' Future. A cancel() in that window
    # used to find a PENDING Future nobody held: it cancelled it without telling
    # concurrent.futures.wait() (which then waited forever) and lost the failure.
    pool = make_pool(1)
    failure = ValueError("the run that ends the series")

    def boom():
        raise failure

    series = pool.schedule_every("s", 1.0, 0, boom, start_at=1.0)
    in_window = threading.Event()
    proceed = threading.Event()
    settle = series.settle

    def held(result, exception):  # the worker's next step, held at the window
        in_window.set()
        assert proceed.wait(WAIT)
        return settle(result, exception)

    series.settle = held
    waited = []
    waiter = threading.Thread(target=lambda: waited.append(cf.wait([series], timeout=WAIT)))
    waiter.start()
    clock.advance(1.0)
    assert in_window.wait(WAIT)
    cancelled = series.cancel()
    proceed.set()
    waiter.join(WAIT)
    assert waited and not waited[0].not_done, "concurrent.futures.wait() was never told"
    assert not cancelled, "cancel() stopped a series that had already ended"
    assert series.exception(0) is failure


@pytest.mark.parametrize("call, name", [
    (lambda pool: pool.schedule_in("a", 1.7e308, 0, print), "delay"),
    (lambda pool: pool.schedule_every("a", 1.7e308, 0, print), "interval"),
])
def test_a_delay_that_runs_past_the_largest_time_is_refused_by_its_name(make_pool, call, name):
    pool = make_pool(1, clock=FakeClock(1e308))
    before = pool.stats()
    with pytest.raises(OverflowError, match=name):
        call(pool)
    assert pool.stats() == before


class OnceBroken:
    """A task id whose hash raises once, when armed: a fault inside the pool's lock."""

    def __init__(self) -> None:
        self.armed = False

    def __hash__(self) -> int:
        if self.armed:
            self.armed = False
            raise TypeError("unhashable for a moment")
        return 1

    def __eq__(self, other: object) -> bool:
        return self is other


def test_a_worker_dying_as_it_claims_still_settles_the_task_it_ran(make_pool, clock):
    # The pool promises that a pool thread dying of any exception closes the
    # pool "so every Future resolves". A worker that ran a task and then died
    # claiming the next one (here: that one's id refuses its hash once) left
    # the task it ran RUNNING for good, its result lost.
    pool = make_pool(1)
    poisoned = OnceBroken()

    def body():
        poisoned.armed = True  # the worker hashes it next, claiming it
        return "ran"

    later = pool.schedule(poisoned, 1.0, 0, print)
    clock.advance(1.0)
    first = pool.schedule("first", 0.0, 5, body)  # due first: higher priority
    assert first.result(WAIT) == "ran"
    assert pool.close(wait=True, timeout=WAIT)
    assert later.done()


class ClockThatFailsOnce(FakeClock):
    """A FakeClock that raises a BaseException once, on the thread that arms it."""

    armed_on: int | None = None

    def __call__(self) -> float:
        if self.armed_on == threading.get_ident():
            self.armed_on = None
            raise Interrupt("the clock, read by the worker after the task returned")
        return super().__call__()


def test_a_worker_killed_by_the_clock_after_a_task_still_settles_it(make_pool):
    clock = ClockThatFailsOnce()
    pool = make_pool(1, clock=clock)

    def body():
        clock.armed_on = threading.get_ident()
        return "ran"

    fut = pool.submit(body)
    assert pool.close(wait=True, timeout=WAIT)  # the worker dies: the pool closes
    assert fut.done(), "the Future of a task that ran stayed running after close"


class CallsBackWhenFreed:
    """A task id whose finaliser calls back into the pool: it must never run under the lock.

    It takes the pool's lock as any call into the pool would, with a timeout,
    so that a finaliser run under the lock fails the test instead of hanging it.
    """

    def __init__(self, name: str, pool, freed: list) -> None:
        self.name, self.pool, self.freed = name, pool, freed

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallsBackWhenFreed) and other.name == self.name

    def __del__(self) -> None:
        lock = self.pool._lock
        took = lock.acquire(timeout=WAIT)
        if took:
            lock.release()
        self.freed.append(took)


@pytest.mark.parametrize("end", ["cancel", "close", "run"])
def test_a_replaced_task_ids_finaliser_never_runs_under_the_lock(make_pool, clock, end):
    # The pool promises that objects a call drops are held until its lock is
    # released, so their finalisers run outside it. The core and the book keep
    # the id object of the first version of an id as their key; once every
    # Future of it was gone, the call that made them forget the id dropped it
    # under the lock, and a finaliser calling back into the pool deadlocked.
    pool = make_pool(1)
    freed: list = []

    def ending():
        if end == "cancel":
            pool.cancel(CallsBackWhenFreed("t", pool, freed))
        elif end == "close":
            pool.close(wait=False)
        else:
            clock.advance(10.0)
            assert latest.result(WAIT) == 0

    pool.schedule(CallsBackWhenFreed("t", pool, freed), 10.0, 0, print)
    latest = pool.schedule(CallsBackWhenFreed("t", pool, freed), 10.0, 0, int)
    ending()
    gc.collect()
    assert freed and all(freed), "a task id's finaliser ran under the pool's lock"


def test_a_version_replacing_a_submitted_one_keeps_its_future_as_the_id(make_pool, clock):
    pool = make_pool(1)
    gate = Gate()
    pool.submit(gate)
    gate.wait_started()
    submitted = pool.submit(int)  # pending behind the gate; its id is the Future itself
    newer = pool.schedule(submitted, 0.0, 0, str)
    assert submitted.cancel_reason == "replaced"
    assert newer.task_id is submitted
    gate.release()
    assert newer.result(WAIT) == ""
