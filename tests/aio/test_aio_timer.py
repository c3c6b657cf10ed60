"""Timers on loops that fire early: nothing starts early, and nothing spins.

uvloop counts its timers in whole milliseconds and runs one up to half a
millisecond before its time. Armed again for the same instant after such an
early wake, a timer fires at once, again and again until the instant passes:
100,000 callables spread over a second cost several times their due-now CPU.
``EarlyLoop`` is asyncio's loop with uvloop's habit, made certain: every
timer runs 0.4 ms before its time.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pysched.aio import AsyncScheduler
from pysched.aio._runner import LoopRunner
from pysched.aio._timer import EARLY_WAKE_DELAY, DeadlineTimer

EARLY = 4e-4


class EarlyLoop(asyncio.SelectorEventLoop):  # type: ignore[misc, valid-type]
    """Runs a timer as soon as it is less than EARLY seconds away, as uvloop may;
    ``timers`` counts the timers armed."""

    def __init__(self) -> None:
        super().__init__()
        self._clock_resolution = EARLY  # what asyncio's loop runs ahead of time
        self.timers = 0

    def call_at(self, when: float, callback: Any, *args: Any, context: Any = None) -> Any:
        self.timers += 1
        return super().call_at(when, callback, *args, context=context)


def run_on(loop: asyncio.AbstractEventLoop, main: Any) -> Any:
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def test_a_deadline_timer_woken_early_waits_once_more_and_calls_back_on_time() -> None:
    loop = EarlyLoop()

    async def main() -> tuple[list[float], float]:
        calls: list[float] = []
        done = asyncio.Event()
        timer = DeadlineTimer(loop, lambda: (calls.append(loop.time()), done.set()))
        deadline = loop.time() + EARLY / 2  # within the early window: it wakes at once
        timer.arm(deadline)
        await done.wait()
        assert not timer.armed
        return calls, deadline

    calls, deadline = run_on(loop, main)
    assert len(calls) == 1 and calls[0] >= deadline
    assert loop.timers <= 2  # an early wake, then one more a tick later
    assert EARLY < EARLY_WAKE_DELAY / 2  # what makes the second wake late enough


def test_arming_again_for_the_same_deadline_keeps_the_timer() -> None:
    loop = EarlyLoop()

    async def main() -> None:
        timer = DeadlineTimer(loop, lambda: None)
        deadline = loop.time() + 1.0
        timer.arm(deadline)
        timer.arm(deadline)
        timer.disarm()
        assert not timer.armed

    run_on(loop, main)
    assert loop.timers == 1


@pytest.mark.parametrize("loop_factory", [EarlyLoop, "uvloop"])
def test_callables_spread_over_time_start_on_time_without_spinning(
        loop_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    if loop_factory == "uvloop":
        uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed")
        loop = uvloop.new_event_loop()
    else:
        loop = loop_factory()
    n = 200
    pumps = 0
    pump = LoopRunner._pump

    def counted(self: LoopRunner) -> None:
        nonlocal pumps
        pumps += 1
        pump(self)

    monkeypatch.setattr(LoopRunner, "_pump", counted)

    async def main() -> list[tuple[float, float]]:
        sched = AsyncScheduler()
        started: list[tuple[float, float]] = []
        start = loop.time() + 0.01
        futures = [sched.schedule(i, start + i * 5e-4, 0,
                                  lambda at=start + i * 5e-4: started.append((at, loop.time())))
                   for i in range(n)]
        await asyncio.gather(*futures)
        sched.close()
        return started

    started = run_on(loop, main)
    assert len(started) == n
    assert all(now >= at for at, now in started), "a callable started before its run_at"
    # At most about two wake-ups per run_at (an early one, then one a tick later);
    # re-armed for the same instant, an early timer wakes the pump hundreds of times.
    assert pumps <= 2 * n, pumps
