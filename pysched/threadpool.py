"""ThreadPoolScheduler and its Future and token types (written in ``pysched.pool``)."""

from .pool import (
    CancelToken,
    SchedulerFull,
    TaskCancelled,
    TaskFuture,
    TaskTimeout,
    ThreadPoolScheduler,
    current_token,
)

__all__ = ["CancelToken", "SchedulerFull", "TaskCancelled", "TaskFuture", "TaskTimeout",
           "ThreadPoolScheduler", "current_token"]
