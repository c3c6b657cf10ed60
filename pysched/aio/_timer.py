"""A loop timer that never calls back before its deadline."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable

__all__ = ["EARLY_WAKE_DELAY", "DeadlineTimer"]

# Some loops fire a timer early: uvloop counts whole milliseconds, so its
# timers run up to half a millisecond before their time. Armed again for the
# same instant, such a timer fires at once, again and again until the instant
# passes: the loop spins. Woken early, a DeadlineTimer waits this long instead.
EARLY_WAKE_DELAY = 1e-3


class DeadlineTimer:
    """``callback()`` once ``loop.time()`` reaches ``deadline``, never before.

    ``arm(deadline)`` (again) moves it, ``disarm()`` stops it; the deadline
    itself is kept, as a loop's own handle may not say it (uvloop rounds it,
    and gives a plain Handle for a time already passed).
    """

    __slots__ = ("_loop", "_callback", "_context", "_handle", "deadline")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object],
                 context: contextvars.Context | None = None) -> None:
        self._loop = loop
        self._callback = callback
        self._context = context
        self._handle: asyncio.Handle | None = None
        self.deadline = 0.0

    @property
    def armed(self) -> bool:
        """Whether a callback is to come."""
        return self._handle is not None

    def arm(self, deadline: float) -> None:
        """Call back at ``deadline`` (on the loop's clock) instead of any earlier arming."""
        if self._handle is not None:
            if self.deadline == deadline:
                return
            self._handle.cancel()
        self.deadline = deadline
        self._handle = self._loop.call_at(deadline, self._fire, context=self._context)

    def disarm(self) -> None:
        """Call back no more, until armed again."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        now = self._loop.time()
        if now < self.deadline:  # early: see EARLY_WAKE_DELAY
            self._handle = self._loop.call_at(max(self.deadline, now + EARLY_WAKE_DELAY),
                                              self._fire, context=self._context)
            return
        self._handle = None
        self._callback()
