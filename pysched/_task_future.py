"""TaskFuture: the concurrent.futures.Future of one scheduled task version.

A TaskFuture also carries what its worker needs (fn, args, kwargs, timeout,
the recurring series if any), so each scheduled task allocates one object of
ours on top of the core's entry. Fields that most tasks leave at their
default are class attributes, set on the instance only when they differ:
that keeps ``submit()`` cheap.

Invariant: a TaskFuture is resolved (result, exception or cancelled) exactly
once, by the one party that took its version out of the scheduler's
``_pending`` map or out of the core: the worker that claimed it, or the call
that cancelled, replaced, evicted or closed it. All of them do it outside the
scheduler's lock, since resolving runs done callbacks.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._cancel_token import CancelToken
    from ._recurring import Recurrence
    from .threadpool import ThreadPoolScheduler

# A submitted task's id is its own Future; storing the Future in its own
# attribute would make a reference cycle and leave every finished Future to
# the garbage collector, so the id field holds this marker instead.
_SELF: Any = object()
_NO_KWARGS: Mapping[str, Any] = types.MappingProxyType({})

__all__ = ["TaskFuture"]


class TaskFuture(Future):  # type: ignore[type-arg]
    """The Future of one version of a scheduled task, or of a recurring series.

    It behaves as a ``concurrent.futures.Future``. ``cancel()`` on a version
    that has not started removes it from the scheduler, so it never runs; on a
    running version it returns False and changes nothing (use
    ``ThreadPoolScheduler.cancel(task_id)`` to ask running code to stop).

    A recurring series' Future stays pending while runs come and go: it is
    cancelled when the series is cancelled, replaced or closed, and fails
    with the exception of a run that stops the series.
    """

    _task_id: Hashable = _SELF
    _version = 0
    _args: tuple[Any, ...] = ()
    _kwargs: Mapping[str, Any] = _NO_KWARGS
    _timeout: float | None = None
    _series: Recurrence | None = None
    _cancel_reason: str | None = None  # why this Future was cancelled
    _stop_reason: str | None = None  # why the running version's token is (to be) set
    _token: CancelToken | None = None  # made on the first current_token() of a run
    _timed_out = False  # the running version passed its timeout
    _run_no = 0  # counts the runs of a series, so a stale timeout entry is recognised
    _in_run = False  # a series: a run is claimed or running (fn must stay in place)

    def __init__(self, owner: ThreadPoolScheduler, fn: Callable[..., Any]) -> None:
        super().__init__()
        self._owner = owner
        self._fn: Callable[..., Any] | None = fn

    @property
    def task_id(self) -> Hashable:
        """The task id; for ``submit()`` it is this Future itself."""
        task_id = self._task_id
        return self if task_id is _SELF else task_id

    @property
    def version(self) -> int:
        """The version number the core gave (a series: the version of its first run)."""
        return self._version

    @property
    def cancel_reason(self) -> str | None:
        """Why it was cancelled: "cancelled", "replaced", "evicted" or "closed"; else None."""
        return self._cancel_reason

    def cancel(self) -> bool:
        """Cancel this version if it has not started; True if it is now cancelled.

        A pending version is taken out of the scheduler and can never start. A
        version claimed by a worker but not started yet is cancelled too: the
        worker sees it and does not run it. O(1).
        """
        return self._owner._cancel_future(self)

    def _release_call(self) -> None:
        """Drop fn and its arguments once the version can no longer run."""
        self._fn = None
        if self._args:
            del self._args
        if self._kwargs:
            del self._kwargs
