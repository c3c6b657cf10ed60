"""The host Task that ties an AsyncScheduler's work to its event loop's life.

An asyncio Task of the scheduler's own lives on the loop while the scheduler
has work (a version pending or running), as a TaskGroup's parent does for its
children. What shuts a loop down (``asyncio.run`` once ``main()`` has
returned, ``asyncio.Runner.close()``) cancels every Task on it, this one too.
Cancelling it cancels the Future it waits on at once, so the scheduler can ask
``lost()`` before it starts anything and refuse: no work starts during the
teardown, where a new Task would be destroyed while still pending.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Callable
from typing import Any

from ._calls import TASKS_TAKE_A_CONTEXT

__all__ = ["NAME", "Host"]

NAME = "pysched AsyncScheduler host"


async def _wait(wake: asyncio.Future[None]) -> None:
    await wake


class Host:
    """A Task that waits until ``end()``; ``on_lost()`` is called if it is cancelled first."""

    __slots__ = ("task", "_wake", "_ended", "_on_lost")

    def __init__(self, loop: asyncio.AbstractEventLoop, on_lost: Callable[[], None]) -> None:
        self._wake: asyncio.Future[None] = loop.create_future()
        self._ended = False
        self._on_lost = on_lost
        # In an empty context of its own: a copy of its creator's would keep
        # that caller's context values alive for as long as the host lives.
        context = contextvars.Context()
        if TASKS_TAKE_A_CONTEXT:
            self.task = loop.create_task(_wait(self._wake), name=NAME, context=context)
        else:
            self.task = context.run(loop.create_task, _wait(self._wake), name=NAME)
        # lost() catches a cancel the moment it is made; this catches it even if
        # nothing asks lost() afterwards (one loop iteration later).
        self.task.add_done_callback(self._done, context=context)

    def lost(self) -> bool:
        """Whether something other than ``end()`` has asked the host to stop."""
        return not self._ended and (self._wake.cancelled() or _cancel_requested(self.task))

    def end(self) -> None:
        """Let the host Task return: the scheduler has no work left."""
        self._ended = True
        if not self._wake.done():
            self._wake.set_result(None)

    def _done(self, task: asyncio.Task[None]) -> None:
        if not self._ended:
            self._ended = True
            self._on_lost()


if sys.version_info >= (3, 11):
    def _cancel_requested(task: asyncio.Task[Any]) -> bool:
        return task.cancelling() > 0
else:
    def _cancel_requested(task: asyncio.Task[Any]) -> bool:
        # A Task cancelled before its first step has no Future to cancel yet.
        return bool(getattr(task, "_must_cancel", False))
