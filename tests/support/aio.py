"""Event loops and a runner for the AsyncScheduler tests.

``VirtualTimeLoop`` is an asyncio loop whose clock never waits: when nothing
is ready it jumps straight to the next timer, so time-dependent tests run at
once and always the same way; it records each wait in ``waits``. When nothing
is ready and no timer is set, a real loop would wait forever: this one raises
instead, so a lost wake-up fails the test rather than hanging it.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import selectors
import sys
import threading
from asyncio import base_events
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from pysched.aio import AsyncScheduler

T = TypeVar("T")

# Real-time guard of a test on a real loop: it only turns a hang into a
# failure; no test waits for it when the scheduler works.
WAIT = 30.0


class _JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Polls without blocking; a wait for a timer moves the loop's clock instead."""

    loop: VirtualTimeLoop

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None:
            raise RuntimeError("the loop would wait forever: nothing is ready and no timer is set")
        if timeout > 0:
            loop = self.loop
            loop.waits.append(timeout)
            # The wait is for the head timer unless asyncio capped it: then jump
            # to the head's own time, not to now + (when - now), which rounds.
            timers = loop._scheduled
            if timers and timeout < base_events.MAXIMUM_SELECT_TIMEOUT:
                loop.now = max(loop.now, timers[0].when())
            else:
                loop.now += timeout
        return super().select(0)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop on a virtual clock that jumps to each due timer."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.waits: list[float] = []  # the timeout of each wait for a timer
        selector = _JumpingSelector()
        selector.loop = self
        super().__init__(selector)

    def time(self) -> float:
        return self.now


def _uvloop_factory() -> asyncio.AbstractEventLoop:
    import uvloop  # the fixture skips where it is missing

    return uvloop.new_event_loop()  # type: ignore[no-any-return]


# The loops the tests run on: virtual time, asyncio's own, and uvloop's.
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "virtual": VirtualTimeLoop,
    "asyncio": asyncio.new_event_loop,
    "uvloop": _uvloop_factory,
}


def run(main: Callable[[], Awaitable[T]],
        loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> T:
    """Run ``main()`` to completion on a new loop, as ``asyncio.run`` does (3.10 has no Runner).

    Fails if ``main`` returns while tasks are still running on the loop: a
    closed scheduler must leave nothing behind. On a real loop, a ``main``
    still running after WAIT seconds fails with TimeoutError (on the virtual
    loop a hang cannot happen: it raises when nothing is left to wait for).
    """
    loop = loop_factory()
    try:
        if isinstance(loop, VirtualTimeLoop):
            result = loop.run_until_complete(main())
        else:
            result = loop.run_until_complete(asyncio.wait_for(main(), WAIT))
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        assert not left, f"tasks left running: {left}"
        return result
    finally:
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def settle(rounds: int = 20) -> None:
    """Let the loop run its ready callbacks ``rounds`` times, without letting time pass."""
    for _ in range(rounds):
        await asyncio.sleep(0)


# tests/aio/conftest.py imports these by their function names; the fixtures are
# named as the tests ask for them, so a test parameter never shadows an import.
@pytest.fixture(name="loop_factory", params=sorted(LOOPS))
def loop_factory_fixture(request: pytest.FixtureRequest) -> Callable[[], asyncio.AbstractEventLoop]:
    """Each event loop in turn; the uvloop case is skipped where uvloop is not installed."""
    if request.param == "uvloop":
        pytest.importorskip("uvloop", reason="uvloop is not installed")
    return LOOPS[request.param]


@pytest.fixture(name="make_scheduler")
def make_scheduler_fixture(impl: Any) -> Callable[..., AsyncScheduler]:
    """AsyncScheduler on the core that ``impl`` names."""
    return functools.partial(AsyncScheduler, _core_factory=impl.Scheduler)


def in_thread(fn):
    """What ``fn()`` returned or raised, called on a thread of its own."""
    outcome = []

    def target():
        try:
            outcome.append(("returned", fn()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(("raised", exc))

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    return outcome[0]


def run_as_asyncio_run(main, loop_factory):
    """``asyncio.run(main())`` on a loop from ``loop_factory``, teardown included."""
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(main())

    class Policy(asyncio.DefaultEventLoopPolicy):  # 3.10: asyncio.run takes no loop factory
        def new_event_loop(self):
            if loop_factory is asyncio.new_event_loop:  # which asks this policy
                return super().new_event_loop()
            return loop_factory()

    old = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(Policy())
    try:
        return asyncio.run(main())
    finally:
        asyncio.set_event_loop_policy(old)


def destroyed_pending(caplog) -> list[str]:
    gc.collect()
    messages = [record.getMessage() for record in caplog.records]
    return [message for message in messages if "destroyed but it is pending" in message]
