"""The records the store protocol passes: new versions, rows, claims, outcomes, filters.

Plain NamedTuples with no behaviour beyond ``Serves.matcher``; store.py holds
the protocol that reads and writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

DEFAULT_QUEUE = "default"
# A claim's attempts count is below this: the largest PostgreSQL's integer column keeps.
# Claims count up to it at most, so a hostile count there is claimed and refused.
ATTEMPTS_LIMIT = 2**31 - 1

__all__ = ["ATTEMPTS_LIMIT", "DEFAULT_QUEUE", "Changes", "Claim", "NewTask", "Outcome", "Row",
           "Serves"]


class NewTask(NamedTuple):
    """A version to store: ``args`` is the JSON text of ``{"args": [...], "kwargs": {...}}``."""

    task_id: str
    run_at: float
    priority: int
    ref: str
    args: str
    queue: str = DEFAULT_QUEUE


class Row(NamedTuple):
    """What a scheduler needs to keep its local heap in step with a row."""

    task_id: str
    version: int
    state: str
    run_at: float
    priority: int
    blocked: bool  # pending, but an older version still holds a live lease
    ref: str = ""
    queue: str = DEFAULT_QUEUE


class Changes(set[str]):
    """What ``Store.wait_changes`` saw: the task ids other processes wrote, and
    ``everything`` when a notification (or a new subscription) asked for a full
    re-read as well. A plain empty set from a store means everything too."""

    everything = False


class Serves(NamedTuple):
    """What one worker can run: the rows a claim may take.

    A row is served when its ``ref`` is one of ``names`` (registered here) or
    starts with one of ``prefixes`` (``module:`` or ``module.`` of an allowed
    module), and its queue is in ``queues`` (None: every queue). A worker
    leaves every other row to one that serves it, so a rolling deploy in which
    old workers do not know a new task name loses nothing to error.
    """

    names: tuple[str, ...]
    prefixes: tuple[str, ...]
    queues: tuple[str, ...] | None = None

    def matcher(self) -> Callable[[Any, Any], bool]:
        """``matches(ref, queue)``, O(1) per row once built (build it once per batch)."""
        names = frozenset(self.names)
        queues = None if self.queues is None else frozenset(self.queues)
        return lambda ref, queue: (
            (ref in names or isinstance(ref, str) and ref.startswith(self.prefixes))
            and (queues is None or queue in queues))


class Claim(NamedTuple):
    """A version this owner now runs under a lease."""

    task_id: str
    version: int
    run_at: float
    priority: int
    ref: str
    args: str
    attempts: int
    token: str  # "owner:batch:version:attempt:task_id", unique per claim: what finish() compares
    fmt: int


class Outcome(NamedTuple):
    """The end of one claimed run, for ``Store.finish``."""

    token: str
    task_id: str
    version: int
    state: str  # completed, failed or error; pending hands the claim back
    error: str | None
    # With state pending: when the version is due again (a retry after a
    # failure, with its error kept); None keeps run_at and gives the claim's
    # attempt back (a hand-back unrun, or stopped by its pool closing).
    retry_at: float | None = None
