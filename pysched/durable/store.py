"""The store protocol: what a durable schedule keeps, and the operations on it.

One row per task id holds its newest version (``version``, ``state``,
``run_at``, ``priority``, the work as ``ref`` + JSON ``args``, ``attempts``)
and the lease of the version now running, if any (``lease_owner``,
``lease_token``, ``lease_expires``). Invariants every store keeps:

- ``version`` only grows: schedule, replace and cancel each add one, so an
  entry that any process still holds for an older version is refused.
- A row moves pending -> running only by a claim: a conditional update on
  (task_id, version, state = pending) with no live lease, which sets the
  lease. So a version is claimed by one owner at a time, and a newer version
  cannot start while an older one still holds the lease (one version of a
  task id runs at a time, across processes).
- Finishing is conditional on the claim's ``lease_token`` (owner, version,
  attempt): it records the outcome only if the row still has that version
  in state running, and otherwise only releases the lease. A worker that
  lost its lease or whose version was replaced changes nothing else.
- A lease that expired is released; its row, if still running, goes back to
  pending with the same version (at-least-once: handlers must be idempotent).

Times: ``run_at`` is a wall-clock instant in seconds since the epoch; leases
are compared against the store's own clock (``time.time()`` for SQLite and
memory, the server's clock for PostgreSQL).
"""

from __future__ import annotations

import json
import math
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from .errors import BadRow, NotDurable
from .records import ATTEMPTS_LIMIT, DEFAULT_QUEUE, Changes, Claim, NewTask, Outcome, Row, Serves
from .series_table import SeriesTable

PENDING = "pending"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
ERROR = "error"  # the row itself could not be run: bad reference, JSON or format
FINAL_STATES = frozenset({COMPLETED, FAILED, CANCELLED, ERROR})
KNOWN_STATES = FINAL_STATES | {PENDING, RUNNING}

# Rows carry the format they were written in; a reader refuses newer ones.
ROW_FORMAT = 1
INT64_MAX = 2**63 - 1
# The longest task id every store keeps, in UTF-8 bytes: well under PostgreSQL's
# b-tree entry limit (about 2.7 kB) and its notification payload (8 kB).
MAX_KEY_BYTES = 1024

__all__ = [
    "CANCELLED", "COMPLETED", "DEFAULT_QUEUE", "ERROR", "FAILED", "FINAL_STATES", "KNOWN_STATES",
    "PENDING", "ROW_FORMAT", "RUNNING", "Changes", "Claim", "NewTask", "Outcome", "Row", "Serves",
    "Store", "batch_prefix", "check_claim", "check_fields", "check_key", "check_tasks",
    "claimed", "decode_args", "encode_args", "parse_json",
]


def batch_prefix(owner: str) -> str:
    """The start of the lease tokens of one claim batch: ``owner`` and a nonce.

    A hand-back gives its attempt back, so (owner, version, attempts) can recur;
    the nonce keeps every claim's token its own, so an outcome of an earlier claim
    (a stored batch tried again after a lost connection) never matches a later one.
    """
    return f"{owner}:{secrets.token_hex(6)}"


def check_key(value: Any, name: str, limit: int = MAX_KEY_BYTES) -> str:
    """``value`` if every store can keep it as a key: a str of valid Unicode, no NUL, at
    most ``limit`` UTF-8 bytes; else TypeError or ValueError naming ``name``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if "\x00" in value:
        raise ValueError(f"{name} must not contain NUL characters, got {value[:80]!r}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} must be valid Unicode text, got {value[:80]!r}: {exc.reason}"
                         ) from None
    if size > limit:
        raise ValueError(f"{name} is {size} bytes in UTF-8; a store keeps at most {limit}")
    return value


def claimed(found: list[Any]) -> list[Claim]:
    """The Claims of rows ``(task_id, version, run_at, priority, ref, args, attempts,
    lease_token, fmt, seq)`` as a claim's RETURNING gives them, in claim order.

    RETURNING gives no order. The sort happens after the claim committed, so it
    must not raise on a row whose fields are corrupt (a text ``seq``): that would
    lose the whole leased batch. Such a batch keeps the database's order; a
    corrupt row is then refused when its claim is checked.
    """
    try:
        ordered = sorted(found, key=lambda r: (r[2], -r[3], r[-1]))
    except TypeError:
        ordered = list(found)
    return [Claim(*r[:9]) for r in ordered]


def check_tasks(tasks: Sequence[NewTask]) -> None:
    """Raise TypeError or ValueError (naming ``task_id`` or ``ref``) unless every store
    can keep each of ``tasks``: what ``schedule`` checks before it writes anything."""
    for task in tasks:
        check_key(task.task_id, "task_id")
        check_key(task.ref, "ref")


def encode_args(args: Sequence[Any], kwargs: dict[str, Any] | None) -> str:
    """JSON text for ``args`` and ``kwargs``, or NotDurable naming the culprit.

    NaN and infinities are refused (JSON has none); tuples come back as lists.
    """
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"args must be a list or tuple, not {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict, not {type(kwargs).__name__}")
    try:
        return json.dumps({"args": list(args), "kwargs": kwargs or {}}, allow_nan=False,
                          separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise NotDurable(f"args and kwargs must be JSON-serialisable to be stored: {exc}") from exc


def parse_json(text: str) -> Any:
    """``json.loads(text)``, with ValueError for JSON nested too deeply to read: the
    decoder raises RecursionError there, which no refusal of bad JSON would catch."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def decode_args(text: Any) -> tuple[list[Any], dict[str, Any]]:
    """The (args, kwargs) stored as ``text``, or BadRow saying what is wrong."""
    if not isinstance(text, str):
        raise BadRow(f"args must be JSON text, got {type(text).__name__}")
    try:
        data = parse_json(text)
    except ValueError as exc:
        raise BadRow(f"args are not valid JSON: {exc}") from exc
    if (not isinstance(data, dict) or set(data) != {"args", "kwargs"}
            or not isinstance(data["args"], list) or not isinstance(data["kwargs"], dict)):
        raise BadRow('args must be a JSON object {"args": [...], "kwargs": {...}}')
    return data["args"], data["kwargs"]


def check_fields(version: Any, run_at: Any, priority: Any, fmt: Any = ROW_FORMAT) -> None:
    """Raise BadRow unless a row's fields are ones this version can schedule."""
    if type(fmt) is not int or fmt > ROW_FORMAT:
        raise BadRow(f"row format {fmt!r} is newer than this pysched understands ({ROW_FORMAT})")
    if type(version) is not int or not 0 < version <= INT64_MAX:
        raise BadRow(f"version {version!r} is not a positive 64-bit int")
    # SQLite may hand back a whole REAL as an int: both are times, bool is not.
    if type(run_at) not in (float, int) or not math.isfinite(run_at):
        raise BadRow(f"run_at {run_at!r} is not a finite time")
    if type(priority) is not int or not -INT64_MAX - 1 <= priority <= INT64_MAX:
        raise BadRow(f"priority {priority!r} is not a 64-bit int")


def check_claim(claim: Claim) -> tuple[list[Any], dict[str, Any]]:
    """The decoded arguments of ``claim``, or BadRow for a row that must not run."""
    check_fields(claim.version, claim.run_at, claim.priority, claim.fmt)
    # A count below 1 would defeat a retry policy's limit (and its backoff).
    if type(claim.attempts) is not int or not 0 < claim.attempts < ATTEMPTS_LIMIT:
        raise BadRow(f"attempts {claim.attempts!r} is not a count of claims"
                     f" (1 to {ATTEMPTS_LIMIT - 1})")
    return decode_args(claim.args)


class Store(ABC):
    """A persistent table of task rows shared by every scheduler that opens it.

    Every method is one transaction and is safe to call from any thread.
    ``notifies`` is True when ``wait_changes`` blocks for other processes'
    writes (PostgreSQL LISTEN/NOTIFY); others are polled with ``changed()``.
    """

    notifies = False

    @abstractmethod
    def schedule(self, tasks: Sequence[NewTask]) -> list[int]:
        """Store each task as the newest version of its id (pending); return the versions.

        Later items in ``tasks`` replace earlier ones with the same id.
        O(len(tasks)) row writes in one transaction.
        """

    @abstractmethod
    def cancel(self, task_id: str, version: int | None = None) -> int | None:
        """Bump the version of a pending or running row to a cancelled one.

        Returns the new version, or None when nothing of ``task_id`` is pending
        or running. A running version keeps its lease and runs on; its outcome
        is not recorded. With ``version``, only that version and only while
        it is pending (what ``Future.cancel()`` needs).
        """

    @abstractmethod
    def rows(self, task_ids: Sequence[str] | None = None) -> list[Row]:
        """Every pending row (``task_ids`` None), or the rows of ``task_ids`` in any state."""

    def finished_since(self, since: float) -> list[Row] | None:
        """The rows in a final state last written at or after ``since`` (store clock), from
        an index of the finished rows by that time; None where the store keeps none (then
        a caller re-reads the rows it wants by id)."""
        return None

    @abstractmethod
    def claim(self, threshold: float, limit: int, owner: str, lease: float,
              serves: Serves | None = None, batch: str | None = None) -> list[Claim]:
        """Claim up to ``limit`` pending, lease-free rows with ``run_at <= threshold``.

        In order of run_at, then higher priority, then scheduling order; each
        is a conditional update on (task_id, version, state = pending) that
        sets a lease of ``lease`` seconds for ``owner``. With ``serves``, only
        rows it matches. ``batch`` (from ``batch_prefix(owner)``; a new one if
        None) starts every lease token of this claim, so a caller whose claim
        raised after the database leased rows can ``release_batch`` them.
        """

    @abstractmethod
    def release_batch(self, owner: str, batch: str) -> list[str]:
        """Hand back unrun every claim of the claim batch ``batch`` that ``owner`` still holds:
        its lease released, a running row pending again with its attempt given back.
        For a claim whose answer was lost: none of it started. Returns the task ids."""

    @abstractmethod
    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        """Record each outcome if its claim still holds the row's version; True where recorded.

        A False still releases the lease if ``token`` holds it. An outcome in
        state pending hands a claimed version back: unrun (closing with work
        claimed but not started, or stopped by its pool closing), which gives
        its attempt back; or to be retried at ``retry_at`` with its error kept.
        Every recorded outcome sets ``updated_at``.
        """

    @abstractmethod
    def retry(self, task_id: str) -> int | None:
        """Put a failed or errored row back as a new pending version due now (store clock),
        its attempts reset; the new version, or None if the row is in no such state."""

    @abstractmethod
    def prune(self, before: float, limit: int) -> int:
        """Delete up to ``limit`` rows in a final state last written before ``before``
        (store clock; rows never written since this column existed count by
        run_at). Returns how many. Scheduling such an id again starts at version 1."""

    @abstractmethod
    def pending_stats(self, before: float) -> tuple[int, float | None]:
        """(number, earliest run_at) of pending rows due before ``before``: work that no
        worker has claimed although it is due."""

    @abstractmethod
    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str] | None = None
                  ) -> list[str]:
        """Extend leases of ``owner`` to ``lease`` seconds from now; return their tokens.

        With ``tokens``, only the leases of those claims (the runs in flight in the
        caller), so a lease the caller no longer knows of (a claim whose answer was
        lost) expires instead of being renewed forever; a token asked for and not
        returned is a lease lost (expired and released, or taken over). None
        renews every lease of ``owner``.
        """

    @abstractmethod
    def requeue_expired(self) -> list[str]:
        """Release expired leases; running rows go back to pending. Returns the task ids."""

    @abstractmethod
    def repair_leases(self, horizon: float) -> list[str]:
        """Put back to pending the rows running with no lease, and release the leases of
        rows pending or running that expire more than ``horizon`` seconds from now (or are
        not a time): no live worker sets any of these. Returns the ids.
        O(rows): housekeeping calls it once per resync, not per poll.
        """

    @abstractmethod
    def unknown_states(self, limit: int = 10) -> list[tuple[str, str]]:
        """Up to ``limit`` (task_id, state) of rows in a state this version does not know."""

    @abstractmethod
    def release_owner(self, owner: str, expiring_within: float | None = None) -> list[str]:
        """Release the leases of ``owner`` at once (it restarted, so it runs none of them).

        With ``expiring_within``, only those expiring within that many seconds from
        now (store clock): a lease renewed more recently than that may belong to
        another live process using the same owner, and is left to its heartbeat
        or to expire. None releases every lease of ``owner``.
        """

    @abstractmethod
    def held_by(self, owner: str) -> list[str]:
        """The task ids whose lease ``owner`` holds (what a takeover will re-run if it died)."""

    @abstractmethod
    def mark_error(self, task_id: str, version: int, message: str) -> bool:
        """Move a pending row of this version to state error with ``message``."""

    @abstractmethod
    def get(self, task_id: str) -> dict[str, Any] | None:
        """Every column of one row, for inspection and tests."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """The number of rows in each state (states with none are left out). O(rows)."""

    @abstractmethod
    def wall_high_water(self, wall: float | None = None) -> float | None:
        """Raise the stored highest wall time seen to ``wall`` (if given); return it."""

    # True when now() is a clock shared by every node and independent of this
    # machine's (the database server's): the reference for clock-skew checks.
    reference_clock = False
    # How many times a notifying store has (re)subscribed: after each, writes
    # made while it was not listening are unseen, so a full re-read must follow.
    subscriptions = 0

    def series_table(self) -> SeriesTable:
        """The store's recurring series and their fire-time claims (see series_table.py)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no recurring series")

    def now(self) -> float:
        """The store's clock in seconds since the epoch: what leases are measured on."""
        return time.time()

    def changed(self) -> bool:
        """True if another process may have written since the last call (polling stores)."""
        return False

    def wait_changes(self, timeout: float) -> set[str] | None:
        """Block up to ``timeout`` for other processes' writes (notifying stores only).

        Returns the task ids written (a ``Changes`` whose ``everything`` says a
        full re-read was asked for too), an empty set for "some, re-read
        everything", or None on timeout.
        """
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027 - a store without connections has nothing to do
        """Release connections; the store cannot be used afterwards. Idempotent."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
