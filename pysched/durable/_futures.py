"""The Future of one stored version, and how a row read elsewhere settles it."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from .store import COMPLETED, ERROR, FAILED, Row

__all__ = ["DurableFuture", "DurableTaskFailed", "cancel_all", "settle_from_row"]


class DurableFuture(Future):  # type: ignore[type-arg]
    """The Future of one stored version, as this process sees it.

    It resolves with the callable's return value or exception when the
    version runs here; with None or ``DurableTaskFailed`` when this process
    sees it finished elsewhere; it is cancelled when the version is
    cancelled or replaced anywhere. ``cancel()`` cancels the version in the
    store if it is still pending there.
    """

    def __init__(self, cancel_version: Callable[[DurableFuture], bool], task_id: str,
                 version: int) -> None:
        super().__init__()
        self._cancel_version = cancel_version  # cancels the version in the store, then this
        self.task_id = task_id
        self.version = version

    def cancel(self) -> bool:
        if self.done():
            return super().cancel()
        return self._cancel_version(self)


class DurableTaskFailed(Exception):
    """A version failed (or its row was unusable) in another process."""


def cancel_all(futures: list[DurableFuture]) -> None:
    """Cancel Futures whose versions were cancelled or replaced (not through the store)."""
    for future in futures:
        Future.cancel(future)


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
