"""pysched: a fast, cancellable priority task scheduler with a Cython core.

``IMPLEMENTATION`` says which core is in use: ``"cython"``, or ``"python"``
where the extension is absent or PYSCHED_NO_EXTENSIONS is set.

Importing pysched loads only the core; the thread pool, the asyncio
scheduler, the calendars and the bounded queue load when a name of theirs is
first used, and ``pysched.durable`` and the other subpackages when first read.
"""

from ._errors import InvalidTransition, SchedulerClosed
from ._impl import IMPLEMENTATION, QueueEntry, Scheduler, StableBoundedPriorityQueue, Task
from ._version import __version__

TYPE_CHECKING = False  # as in pysched._validate: true for type checkers, typing unloaded
if TYPE_CHECKING:
    from .aio import AsyncScheduler
    from .bounded import QueueClosed, ThreadSafeBoundedPriorityQueue
    from .calendar import Cron, Every
    from .threadpool import (
        CancelToken,
        SchedulerFull,
        TaskCancelled,
        TaskFuture,
        TaskTimeout,
        ThreadPoolScheduler,
        current_token,
    )
else:
    from ._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), {
        "AsyncScheduler": ".aio",
        "QueueClosed": ".bounded",
        "ThreadSafeBoundedPriorityQueue": ".bounded",
        "Cron": ".calendar",
        "Every": ".calendar",
        "CancelToken": ".threadpool",
        "SchedulerFull": ".threadpool",
        "TaskCancelled": ".threadpool",
        "TaskFuture": ".threadpool",
        "TaskTimeout": ".threadpool",
        "ThreadPoolScheduler": ".threadpool",
        "current_token": ".threadpool",
    })

__all__ = [
    "IMPLEMENTATION",
    "AsyncScheduler",
    "CancelToken",
    "Cron",
    "Every",
    "InvalidTransition",
    "QueueClosed",
    "QueueEntry",
    "Scheduler",
    "SchedulerClosed",
    "SchedulerFull",
    "StableBoundedPriorityQueue",
    "Task",
    "TaskCancelled",
    "TaskFuture",
    "TaskTimeout",
    "ThreadPoolScheduler",
    "ThreadSafeBoundedPriorityQueue",
    "__version__",
    "current_token",
]
