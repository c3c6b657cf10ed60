"""The Future of one stored version, and how a row read elsewhere settles it."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from .store import COMPLETED, ERROR, FAILED, Row

__all__ = ["DurableFuture", "DurableTaskFailed", "settle_from_row"]


class _VersionCanceller(Protocol):
    def _cancel_version(self, future: DurableFuture) -> bool: ...


class DurableFuture(Future):  # type: ignore[type-arg]
    """The Future of one stored version, as this process sees it.

    It resolves with the callable's return value or exception when the
    version runs here; with None or ``DurableTaskFailed`` when this process
    sees it finished elsewhere; it is cancelled when the version is
    cancelled or replaced anywhere. ``cancel()`` cancels the version in the
    store if it is still pending there.
    """

    def __init__(self, scheduler: _VersionCanceller, task_id: str, version: int) -> None:
        super().__init__()
        self._scheduler = scheduler
        self.task_id = task_id
        self.version = version

    def cancel(self) -> bool:
        if self.done():
            return super().cancel()
        return self._scheduler._cancel_version(self)


class DurableTaskFailed(Exception):
    """A version failed (or its row was unusable) in another process."""


def settle_from_row(future: DurableFuture, row: Row) -> None:
    """Resolve a Future whose version another process finished, cancelled or replaced."""
    if future.done():
        return
    if row.version == future.version and row.state == COMPLETED:
        future.set_result(None)
    elif row.version == future.version and row.state in (FAILED, ERROR):
        future.set_exception(DurableTaskFailed(
            f"task {row.task_id!r} version {row.version} {row.state} in another process"))
    else:
        Future.cancel(future)
