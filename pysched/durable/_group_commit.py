"""GroupCommit: writes that arrive together from many threads share one transaction.

A caller ``submit``s one write and waits for its own result. The first caller
that finds no commit in flight leads: it takes every write queued so far (its
own first) and commits them with ``commit`` in one transaction; callers
arriving meanwhile queue. When the leader is done it wakes each caller of its
group with that caller's result or error, and hands the lead to the first
caller still queued, which commits everything queued by then. So a lone caller
commits at once (no timer waits for company), and under load each commit
carries every write that arrived during the one before.

Invariants: the callers queued are in arrival order and are committed in that
order; at most one leader runs at a time (``_leading``), and it is always the
head of the queue when it takes its group; every caller is woken exactly once,
when its result is set or when it becomes leader. ``commit`` must set a result
or an error on every write it is given (``Write.succeed``/``fail``); should it
raise instead, every write of the group that has neither gets that error.

Lock order: ``_lock`` is a leaf, never held while committing or waking.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["GroupCommit", "Write"]

Op = TypeVar("Op")  # what a write asks for
R = TypeVar("R")  # its result

_MAX_GROUP = 512  # writes in one transaction: bounds its size and the leader's wait


class Write(Generic[Op, R]):
    """One caller's write: ``op``, then its result or its error, set once."""

    __slots__ = ("_wake", "done", "error", "op", "result")

    def __init__(self, op: Op) -> None:
        self.op = op
        self.done = False
        self.result: R | None = None
        self.error: BaseException | None = None
        self._wake = threading.Lock()
        self._wake.acquire()  # released once: done, or leading

    def succeed(self, result: R) -> None:
        self.result, self.done = result, True

    def fail(self, error: BaseException) -> None:
        self.error, self.done = error, True

    def outcome(self) -> R:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # set by succeed


class GroupCommit(Generic[Op, R]):
    """Commits the writes submitted from many threads in shared transactions (see the module)."""

    def __init__(self, commit: Callable[[Sequence[Write[Op, R]]], None]) -> None:
        self._commit = commit
        self._lock = threading.Lock()
        self._queue: list[Write[Op, R]] = []
        self._leading = False

    def submit(self, op: Op) -> R:
        """Commit ``op`` (with whatever else is queued) and return its result, or raise its
        error, once its transaction has ended."""
        write: Write[Op, R] = Write(op)
        with self._lock:
            self._queue.append(write)
            lead = not self._leading
            self._leading = True
        if not lead:
            write._wake.acquire()  # noqa: SIM115 - a wake-up, not a critical section
            if write.done:
                return write.outcome()
        self._lead()
        return write.outcome()

    def _lead(self) -> None:
        """Commit the group at the head of the queue, wake it, hand the lead on."""
        with self._lock:
            group = self._queue[:_MAX_GROUP]
            del self._queue[:_MAX_GROUP]
        try:
            self._commit(group)
        except BaseException as exc:
            for write in group:
                if not write.done:
                    write.fail(exc)
        else:
            for write in group:
                if not write.done:  # pragma: no cover - a commit that broke its contract
                    write.fail(RuntimeError("the group commit gave this write no result"))
        finally:
            with self._lock:
                successor = self._queue[0] if self._queue else None
                self._leading = successor is not None
            # The leader's own write is the head of its group: it is not waiting.
            for write in group[1:]:
                write._wake.release()
            if successor is not None:
                successor._wake.release()
