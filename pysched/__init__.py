"""pysched: a fast, cancellable priority task scheduler with a Cython core.

``IMPLEMENTATION`` says which core is in use: ``"cython"``, or ``"python"``
where the extension is absent or PYSCHED_NO_EXTENSIONS is set.
"""

from ._errors import InvalidTransition, SchedulerClosed
from ._impl import IMPLEMENTATION, QueueEntry, Scheduler, StableBoundedPriorityQueue, Task
from ._version import __version__
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
