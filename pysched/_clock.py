"""A user's clock read through one check: the boundary between a scheduler and its clock.

Invariant: every reading a ``CheckedClock`` returns is a finite float and, for
a clock promised monotonic, no lower than any reading it returned before (in
any thread). A reading that is not is never returned: it raises, in the thread
that asked, the clock's own exception, or TypeError / ValueError naming the
clock (``"clock()"``). Code past this object never checks a reading again; what
a failing reading means is each scheduler's one documented rule (the durable
scheduler's is in ``pysched.durable._clocks``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ._validate import check_callable, check_time

__all__ = ["CheckedClock"]


class CheckedClock:
    """``read`` (a zero-argument callable giving seconds) whose readings are checked.

    ``name`` names the clock in errors (``"clock()"``). With ``monotonic``, a
    reading below one already returned raises ValueError. O(1) per reading and
    lock-free: the comparison is against the highest reading seen when this one
    began, which a monotonic clock can never go below, so readings taken at
    once by several threads never raise falsely.

    >>> clock = CheckedClock(iter([1.0, 2.0, 1.5]).__next__, "clock()", monotonic=True)
    >>> clock(), clock()
    (1.0, 2.0)
    >>> clock()
    Traceback (most recent call last):
    ...
    ValueError: clock() went back from 2.0 to 1.5; it must never decrease
    """

    __slots__ = ("_highest", "_monotonic", "_name", "_read")

    def __init__(self, read: Callable[[], float], name: str, *, monotonic: bool) -> None:
        check_callable(read, name.removesuffix("()"))
        self._read = read
        self._name = name
        self._monotonic = monotonic
        # The highest reading returned so far. Updated without a lock: a lost update
        # only lowers it to another reading already returned, which weakens a later
        # check and never makes an honest reading fail.
        self._highest = -math.inf

    def __call__(self) -> float:
        floor = self._highest
        now = self._read()
        if now.__class__ is not float or now - now != 0.0:  # not a finite float: the slow path
            now = check_time(now, self._name)
        if self._monotonic:
            if now < floor:
                raise ValueError(f"{self._name} went back from {floor!r} to {now!r};"
                                 " it must never decrease")
            if now > self._highest:
                self._highest = now
        return now

    def __repr__(self) -> str:
        return f"<CheckedClock {self._name} of {self._read!r}>"
