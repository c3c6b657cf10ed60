"""AsyncScheduler: the core Scheduler's tasks run on an asyncio event loop.

Invariants (the scheduler is used from its loop's thread only, as asyncio
objects are, so no lock is needed):

- The versions, the state and the counts live in a ``pysched.pool.book``
  Book, as the ThreadPoolScheduler's do: ``book.pending[tid]`` is the record
  (``AioVersion``) of the core's pending version of ``tid`` and
  ``book.running[tid]`` that of its running (claimed) version; both change
  only together with the core, so ``len(book.pending) == len(core)``.
  Cancelling, replacing a claimed version, closing and releasing what never
  started are the book's methods; adding a version of an id with nothing
  pending or running, claiming, and completing a plain callable are done
  inline on its dicts and the record, the path every version takes
  (tests/aio/test_aio_book.py pins them to the book's own methods). A
  version's Future changes only through its own methods.
- ``len(book.running)`` never exceeds ``max_concurrency``: the pump claims
  only below it, and only while open.
- Nothing polls: the pump starts every due version, then arms one
  ``loop.call_at`` timer for the head (none when at the cap or empty); a
  schedule, a finished run or the timer queue the next pump with
  ``call_soon``, at most one at a time.
- Each version runs in a copy of the context its ``schedule()`` call saw
  (a fresh empty one when that held no variables). A plain callable is
  called directly by the pump; only an awaitable it returns gets an
  asyncio Task.
- A version's Future (``AsyncTaskFuture``) follows asyncio's Future
  protocol without being an ``asyncio.Future`` (see ``pysched.aio._future``).
- The start rule: a claimed version whose coroutine has not begun (its Task
  has not taken its first step) is still replaced, cancelled or closed as a
  pending one is, and never runs a line.
- Each version ends in exactly one of completed, failed, cancelled or
  replaced: ``scheduled == pending + running + completed + failed + cancelled
  + replaced`` between any two calls; every cancelled Future carries its
  ``cancel_reason``.

Close states, as the ThreadPoolScheduler's (``pysched._close_state``)::

    open    -> closing   close()/aclose()/leaving ``async with``: new schedules
                         raise SchedulerClosed, every version that has not
                         started is cancelled (its Future too, reason
                         "closed"), claiming stops; running ones finish, or
                         get cancelled with ``cancel_running``
    closing -> closed    the last running version finished

Lifetime: while it has work (a version pending or running) the scheduler
keeps a host Task on its loop (``pysched.aio._host``). A scheduler left open
when its loop shuts down (``asyncio.run`` cancels every Task once ``main()``
has returned) closes itself as ``close(cancel_running=True)`` would: nothing
starts any more, versions not started are cancelled (reason "closed") and
running ones are cancelled with everything else, so no Task of it is left
pending when the loop closes. An idle scheduler holds nothing on the loop. A
loop closed without that shutdown (``loop.close()`` alone) drops the pending
work as it drops its own Tasks, and asyncio reports the host as destroyed
while pending, as it would a ``create_task`` still waiting.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._future import AsyncTaskFuture
    from ._scheduler import AsyncScheduler
else:  # each name loads on first use (pysched._lazy)
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), {
        "AsyncTaskFuture": "._future",
        "AsyncScheduler": "._scheduler",
    })

__all__ = ["AsyncScheduler", "AsyncTaskFuture"]
