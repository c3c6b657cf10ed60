"""The thread pool scheduler, one module per job.

- ``scheduler``: ThreadPoolScheduler, the public class (arguments, Futures);
- ``book``: the versions' records, the state and counters, without threads
  (shared with ``pysched.aio``); ``pool_book``: the pool's record of a
  version (``PoolVersion``) and what only the pool's book does;
- ``threads``: the lock, the workers and the dispatcher (lock order, who runs what);
- ``future``: TaskFuture; ``token``: CancelToken and current_token();
- ``recurring``, ``aging``, ``backpressure``, ``deadlines``, ``stats``,
  ``clocks``: one policy or structure each.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backpressure import SchedulerFull
    from .future import TaskFuture
    from .scheduler import ThreadPoolScheduler
    from .token import CancelToken, TaskCancelled, TaskTimeout, current_token
else:  # each name loads on first use (pysched._lazy)
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), {
        "SchedulerFull": ".backpressure",
        "TaskFuture": ".future",
        "ThreadPoolScheduler": ".scheduler",
        "CancelToken": ".token", "TaskCancelled": ".token", "TaskTimeout": ".token",
        "current_token": ".token",
    })

__all__ = ["CancelToken", "SchedulerFull", "TaskCancelled", "TaskFuture", "TaskTimeout",
           "ThreadPoolScheduler", "current_token"]
