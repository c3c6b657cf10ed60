"""AioVersion: the AsyncScheduler book's record of one version, apart from its Future.

What the scheduler needs to run a version and the book knows of it: the
caller's context it runs in, its core Task while claimed, and once its fn
returned an awaitable the asyncio Task awaiting it; why it was ended or asked
to stop. Its ``future`` is what the caller holds. The record points at the
Future, never the other way: a Future kept after its version ended holds
neither the context's values nor fn and its arguments.

Who writes a record: ``AsyncScheduler.schedule`` makes it (``future``,
``context``, ``aio``); the book
(``pysched.pool.book``) writes ``task_id``, ``task`` and ``cancel_reason``;
the loop runner (``pysched.aio._runner``) the rest, all on the loop's thread.
"""

from __future__ import annotations

import contextvars
import math
from asyncio import Task
from collections.abc import Hashable
from typing import Any

from ..pool.recurring import Recurrence
from ._calls import has_begun
from ._future import AsyncTaskFuture

__all__ = ["AioVersion"]


class AioVersion:
    """One version of an AsyncScheduler's task (see the module docstring).

    Fields most versions leave at their default are class attributes, set on
    the instance (in its ``__dict__``, made on first use) only when they
    differ: ``schedule()`` makes one per call.
    """

    __slots__ = ("future", "context", "aio", "task_id", "task", "coro", "__dict__")

    # What the book reads; an AsyncScheduler has no series in its book, and no
    # use for a pending version's run_at.
    run_at = -math.inf
    series: Recurrence | None = None
    in_run = False
    cancel_reason: str | None = None  # set once, by whoever ends the version unstarted
    stop_reason: str | None = None  # why a started version was asked to stop
    stop_msg: Any = None  # the message it was asked to stop with

    task_id: Hashable  # the book's key (Book.adopt sets it)
    task: Any  # the core's Task (Book.claim sets it)
    coro: Any  # set with ``aio``: the coroutine that tells whether it has begun

    # Set by AsyncScheduler.schedule, which makes it without __init__ (a call per version fewer):
    future: AsyncTaskFuture[Any]
    # A copy of its caller's context, which the version runs in (None when that
    # held no variables: it runs in a fresh one); dropped once it starts.
    context: contextvars.Context | None
    # The asyncio Task awaiting what its fn returned; None before (and while it
    # is made, and once it ended).
    aio: Task[Any] | None

    def has_started(self) -> bool:
        """Whether any code of the claimed version has run (the start rule).

        Its fn is called as soon as it is claimed; until an awaitable it
        returned has a Task, it counts as started. Then it has begun once its
        coroutine (or the wrapper awaiting its other awaitable) took a step.
        """
        return self.aio is None or has_begun(self.coro)

    def __repr__(self) -> str:
        return f"<AioVersion of {self.future!r}>"
