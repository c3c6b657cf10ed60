"""ThreadPoolScheduler and done and cancel callbacks of the user's that raise BaseExceptions.

No Future is left unresolved and no callback is skipped when another party's
callback raises a BaseException, during close(), shutdown(cancel_futures=True)
or cancel().
"""

from __future__ import annotations

import threading

import pytest

from pysched import current_token

from support.pool import WAIT, Interrupt


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
