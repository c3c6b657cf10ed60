"""TaskFuture behaves as a concurrent.futures.Future wherever Futures are used.

TaskFuture skips ``Future.__init__`` and makes the Condition and lists of a
Future only when needed (see pysched.pool.future), so these tests go through
the standard library's own consumers: result() and exception() with timeouts,
done callbacks, ``concurrent.futures.wait`` and ``as_completed``, asyncio's
``wrap_future``, and ``repr``. The first test pins the private names it relies on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading

import pytest

from pysched import TaskFuture

from support.pool import WAIT, Gate


def test_the_future_internals_it_relies_on_are_there():
    # If CPython renames these, TaskFuture must follow: fail here, loudly.
    assert set(vars(cf.Future())) == {"_condition", "_state", "_result", "_exception",
                                      "_waiters", "_done_callbacks"}
    from concurrent.futures import _base

    for name in ("PENDING", "RUNNING", "CANCELLED", "CANCELLED_AND_NOTIFIED", "FINISHED"):
        assert isinstance(getattr(_base, name), str)
    assert callable(cf.Future._invoke_callbacks)


def test_a_task_future_makes_no_condition_unless_someone_waits(make_pool):
    pool = make_pool(1)
    fut = pool.submit(abs, -1)
    while not fut.done():  # polling: lock-free reads
        pass
    assert fut.result() == 1 and fut.exception() is None
    assert fut._cond is None and fut._waiter_list is None and fut._callback_list is None


@pytest.mark.parametrize("collect", [cf.wait, lambda fs: list(cf.as_completed(fs))])
def test_wait_and_as_completed_make_no_condition(make_pool, collect):
    # They lock every Future they get; a Condition each made them slow on many Futures.
    pool = make_pool(2)
    gate = Gate()
    pending = [pool.submit(gate) for _ in range(4)]  # two run, two wait in the core
    done = [pool.submit(abs, -n) for n in range(3)]
    gate.release()
    collect(pending + done)
    assert all(f._cond is None for f in pending + done)
    assert [f.result(0) for f in done] == [0, 1, 2]


def test_result_and_exception_wait_with_timeouts(make_pool):
    pool = make_pool(1)
    gate = Gate()
    fut = pool.submit(gate, "late")
    gate.wait_started()
    assert fut.running() and not fut.done()
    with pytest.raises(cf.TimeoutError):
        fut.result(timeout=0)
    with pytest.raises(cf.TimeoutError):
        fut.exception(timeout=0)
    waiter = threading.Thread(target=lambda: fut.result(WAIT))
    waiter.start()
    gate.release()
    waiter.join(WAIT)
    assert not waiter.is_alive() and fut.result(0) == "late"
    bad = pool.submit(int, "x")
    with pytest.raises(ValueError):
        bad.result(WAIT)
    assert isinstance(bad.exception(0), ValueError)


def test_done_callbacks_before_and_after_completion(make_pool):
    pool = make_pool(1)
    gate = Gate()
    seen = []
    called = threading.Event()

    def before(f):
        seen.append(("before", f.result(), threading.current_thread().name))
        called.set()

    fut = pool.submit(gate, 5)
    fut.add_done_callback(before)
    gate.wait_started()
    gate.release()
    assert called.wait(WAIT)  # on the worker, once the result is set
    fut.add_done_callback(lambda f: seen.append(("after", f.result(), "caller")))
    assert seen == [("before", 5, "pysched-worker-0"), ("after", 5, "caller")]


def test_callbacks_of_cancelled_futures(make_pool):
    pool = make_pool(1)
    seen = []
    fut = pool.schedule("a", 5.0, 0, print)
    fut.add_done_callback(lambda f: seen.append(f.cancelled()))
    pool.cancel("a")
    assert seen == [True]


def test_concurrent_futures_wait_and_as_completed(make_pool, clock):
    pool = make_pool(2)
    futs = [pool.schedule(n, float(n), 0, abs, (-n,)) for n in range(1, 5)]
    first = cf.ThreadPoolExecutor(1).submit(cf.wait, futs, None, cf.FIRST_COMPLETED)
    clock.advance(1.0)
    done, not_done = first.result(WAIT)
    assert futs[0] in done and len(not_done) >= 2
    futs.append(pool.schedule("never", 99.0, 0, print))
    futs[-1].cancel()
    collector = cf.ThreadPoolExecutor(1).submit(lambda: sorted(
        f.result() for f in cf.as_completed(futs[:4], timeout=WAIT)))
    clock.advance(3.0)
    assert collector.result(WAIT) == [1, 2, 3, 4]
    done, not_done = cf.wait(futs, timeout=WAIT)
    assert len(done) == 5 and not not_done


def test_asyncio_wrap_future(make_pool):
    pool = make_pool(1)

    async def main():
        return await asyncio.wrap_future(pool.submit(sum, [1, 2, 3]))

    assert asyncio.run(main()) == 6


def test_repr_and_states(make_pool):
    pool = make_pool(1)
    fut = pool.schedule("a", 5.0, 0, print)
    assert isinstance(fut, cf.Future) and isinstance(fut, TaskFuture)
    assert "state=pending" in repr(fut)
    assert not fut.running() and not fut.done() and not fut.cancelled()
    fut.cancel()
    assert "state=cancelled" in repr(fut) and fut.done()
    done = pool.submit(abs, -2)
    done.result(WAIT)
    assert "returned int" in repr(done)


def test_set_result_by_hand_still_works():
    # The inherited Future methods run on the lazily made fields.
    fut = TaskFuture(None, print)
    assert fut.set_running_or_notify_cancel()
    fut.set_result(3)
    assert fut.result(0) == 3
    with pytest.raises(cf.InvalidStateError):
        fut.set_result(4)


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
