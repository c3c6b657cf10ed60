"""The clocks of a scheduler, read at one boundary, and how pysched waits on a clock.

``Clocks`` is the one reader of a scheduler's two clocks: ``clock``, seconds
on a monotonic scale (``time.monotonic`` for ThreadPoolScheduler by
default, ``loop.time`` for AsyncScheduler), and ``wall_clock``, POSIX
seconds (``time.time``). Every reading is checked once, here:

- it is a real number (an int or a float, not a bool), finite;
- the monotonic clock's never goes back: a reading behind the latest one
  is taken as the latest. Readings taken by several threads reach here out
  of order, and a clock set back makes the scheduler's time stand still
  until it has caught up, so nothing runs early and no wait grows. The wall
  clock promises no such thing: its jumps are what calendar series look for.

A clock that raises, or gives anything else, has failed. The owner says in
one place what that means for its scheduler (its ``broken`` handler, called
with the error: both schedulers close, see their docstrings), and the
reading itself then raises where a caller of the scheduler made it
(``now()``, ``reading()``), or gives the latest good reading where the
scheduler's own thread or loop callback made it (``fallback=True``: there
is nobody to tell). A clock is checked once more when a scheduler is made:
a first reading that fails refuses the constructor's argument, naming it.

A monotonic clock may also offer the waiting hook::

    clock.wait_until(condition, deadline) -> None

which blocks on ``condition`` (its lock held by the caller, as for
``Condition.wait``) until the condition is notified or until the clock reads
``deadline`` or later; ``deadline`` None means until notified. Returning
early is allowed: every caller re-reads the clock and loops. With the hook, a
clock that is moved by hand (``pysched.testing.FakeClock``) wakes whoever
waits on it when it passes their deadline. A plain clock is waited on with
``condition.wait(deadline - now)``, in real seconds, which assumes it ticks in
seconds as ``time.monotonic`` does.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from .._validate import check_callable, check_time
from ..calendar._readings import Reading, pair_readings

# Longer lock timeouts raise OverflowError; a wait that long just wakes once
# and the caller loops.
TIMEOUT_MAX = threading.TIMEOUT_MAX

Waiter = Callable[[threading.Condition, "float | None", float], None]

__all__ = ["TIMEOUT_MAX", "Clocks", "Waiter", "waiter_for"]


def _unhandled(error: BaseException) -> None:
    return None


class Clocks:
    """A scheduler's monotonic and wall clocks, every reading checked here.

    See the module docstring for the checks and what a failing reading does.
    ``Clocks(wall_clock)`` checks the wall clock; ``bind(clock)`` adds the
    monotonic one (a ThreadPoolScheduler's at once, an AsyncScheduler's
    ``loop.time`` when it binds to its loop); ``when_broken(handler)`` says
    what a failure does to the scheduler. O(1) a reading (``reading()``: at
    most ``PAIR_ATTEMPTS`` of each clock).
    """

    __slots__ = ("_clock", "_name", "_wall_clock", "_broken", "latest", "latest_reading")

    def __init__(self, wall_clock: Any) -> None:
        check_callable(wall_clock, "wall_clock")
        check_time(wall_clock(), "wall_clock()")
        self._wall_clock: Callable[[], float] = wall_clock
        self._clock: Callable[[], float] = wall_clock  # until bind()
        self._name = "clock()"
        self._broken: Callable[[BaseException], None] = _unhandled
        self.latest = -math.inf  # the latest reading of the monotonic clock
        self.latest_reading: Reading | None = None  # the latest good reading()

    def bind(self, clock: Any, name: str = "clock") -> None:
        """Read ``clock`` as the monotonic clock, named ``name`` in errors; its first
        reading refuses it (TypeError/ValueError naming it) if it fails."""
        check_callable(clock, name)
        self.latest = check_time(clock(), f"{name}()")
        self._clock = clock
        self._name = f"{name}()"
        self.latest_reading = pair_readings(self.wall, self.now)

    def when_broken(self, handler: Callable[[BaseException], None]) -> None:
        """Call ``handler(error)`` at each failing reading, before the reading raises or
        falls back; the scheduler's one way of handling a broken clock."""
        self._broken = handler

    def now(self, fallback: bool = False) -> float:
        """The monotonic clock, checked. A failing reading goes to the handler, then
        raises; with ``fallback`` it gives the latest good reading instead."""
        try:
            now = self._clock()
        except Exception as exc:
            return self._failed(exc, fallback, self.latest)
        if now.__class__ is float and now - now == 0.0:  # a finite float: the common case
            latest = self.latest
            if now < latest:
                return latest
            self.latest = now
            return now
        return self._not_a_float(now, fallback)

    def wall(self) -> float:
        """The wall clock, checked; a failing reading goes to the handler, then raises."""
        try:
            return check_time(self._wall_clock(), "wall_clock()")
        except Exception as exc:
            return self._failed(exc, False, math.nan)

    def reading(self, fallback: bool = False) -> Reading:
        """Both clocks, paired (``pysched.calendar._readings.pair_readings``). A failing
        reading goes to the handler, then raises; with ``fallback`` it gives the latest
        good pair instead."""
        try:
            reading = pair_readings(self.wall, self.now)
        except Exception:  # a clock failed, and the handler has been told
            if not fallback or self.latest_reading is None:
                raise
            return self.latest_reading
        self.latest_reading = reading
        return reading

    def _not_a_float(self, reading: Any, fallback: bool) -> float:
        """A monotonic reading that is no finite float: an int is fine, the rest fails."""
        try:
            now = check_time(reading, self._name)
        except (TypeError, ValueError, OverflowError) as exc:
            return self._failed(exc, fallback, self.latest)
        if now < self.latest:
            return self.latest
        self.latest = now
        return now

    def _failed(self, error: BaseException, fallback: bool, latest: float) -> float:
        self._broken(error)
        if fallback:
            return latest
        raise error


def waiter_for(clock: Any) -> Waiter:
    """Return ``wait(condition, deadline, now)`` for ``clock``.

    ``now`` is the caller's last reading of the clock, taken before it took
    the lock: the clock is never called under the lock from here.
    """
    wait_until = getattr(clock, "wait_until", None)
    if wait_until is not None:
        check_callable(wait_until, "clock.wait_until")

        def wait_on_clock(condition: threading.Condition, deadline: float | None,
                          now: float) -> None:
            wait_until(condition, deadline)

        return wait_on_clock

    def wait_real_seconds(condition: threading.Condition, deadline: float | None,
                          now: float) -> None:
        if deadline is None:
            condition.wait()
        elif deadline > now:
            condition.wait(min(deadline - now, TIMEOUT_MAX))
        # else: already due; the caller re-reads the clock

    return wait_real_seconds
