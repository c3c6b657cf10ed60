"""How pysched waits for a time on an injected clock.

A clock is a zero-argument callable returning seconds on a monotonic scale
(``time.monotonic`` by default). It may also offer the waiting hook::

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

import threading
from collections.abc import Callable
from typing import Any

from .._validate import check_callable, check_time

# Longer lock timeouts raise OverflowError; a wait that long just wakes once
# and the caller loops.
TIMEOUT_MAX = threading.TIMEOUT_MAX

Waiter = Callable[[threading.Condition, "float | None", float], None]

__all__ = ["TIMEOUT_MAX", "Waiter", "checked_clock", "checked_reading", "waiter_for"]


def checked_clock(clock: Any) -> Callable[[], float]:
    """Return ``clock`` itself once it has given one finite reading.

    The first reading is checked here, so a clock returning garbage is
    refused by the constructor (TypeError/ValueError naming ``clock()``).
    """
    check_callable(clock, "clock")
    check_time(clock(), "clock()")
    return clock  # type: ignore[no-any-return]


def checked_reading(clock: Callable[[], float]) -> float:
    """One reading of ``clock`` in a caller's thread, checked as the constructor checks it.

    A reading that is no finite number raises TypeError/ValueError naming
    ``clock()`` before the caller changes anything (pool threads log such a
    reading and close instead: ``pysched.pool.threads``).
    """
    now = clock()
    if now.__class__ is float and now - now == 0.0:  # the common case, fast
        return now
    return check_time(now, "clock()")


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
