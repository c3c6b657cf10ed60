"""Steering a durable store from outside its workers: cancel, retry, pause, resume, trigger.

Each action is one of the store's own writes, as ``DurableScheduler`` makes
it (``Store.cancel``, ``Store.retry``, ``SeriesTable.end`` and
``set_state``), so every worker follows it as it follows a scheduler's:
within its ``poll_interval``, or at once on PostgreSQL's notifications.
What the store has no write for is added here:

- a **pause note**: a row of ``<table>_series_notes`` (series id, the
  generation it was written for, the text), made by ``pause`` and removed by
  ``resume``; a replaced series has none;
- **trigger**: one run of a series now, as a one-shot task of the series'
  work, id ``<series id>@<UTC time>``, due now. It is a task of its own (its
  outcome is listed with the tasks), outside the series' fire times: the
  series' overlap policy does not see it.

An action on a row that is not in the state it needs changes nothing and
says so (``Done.changed`` False); a hostile series row is refused with
``BadRow``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from .._validate import check_priority
from .errors import BadRow
from .listing import Listing
from .reading import Database
from .records import NewTask
from .series_table import ACTIVE, PAUSED
from .series_table import CANCELLED as SERIES_CANCELLED
from .store import Store, check_key, encode_args

__all__ = ["MAX_NOTE", "Done", "Steering"]

MAX_NOTE = 2000  # characters of a pause note


class Done(NamedTuple):
    """What an action did: ``changed`` False when the row was in no state for it."""

    changed: bool
    message: str
    task_id: str | None = None  # the task it made (trigger)


class Steering:
    """The actions on one store, with ``db`` (writable) for the pause notes and
    ``listing`` to read the rows the actions need. ``clock`` gives wall seconds."""

    def __init__(self, store: Store, db: Database, listing: Listing,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.db = db
        self.listing = listing
        self.clock = clock

    def cancel(self, task_id: str) -> Done:
        """Cancel the pending or running version of ``task_id`` and end a series of that id,
        as ``DurableScheduler.cancel`` does (a running version runs on)."""
        check_key(task_id, "task_id")
        version = self.store.cancel(task_id)
        ended = self.store.series_table().end(task_id) is not None
        done = [f"task {task_id!r} cancelled (version {version})"] if version is not None else []
        if ended:
            done.append(f"series {task_id!r} cancelled")
        if not done:
            return Done(False, f"nothing of {task_id!r} is pending, running or an active series")
        return Done(True, "; ".join(done))

    def retry(self, task_id: str) -> Done:
        """Put a failed or errored task back as a new version due now, attempts from 1."""
        check_key(task_id, "task_id")
        version = self.store.retry(task_id)
        if version is None:
            return Done(False, f"task {task_id!r} is not failed or error: not retried")
        return Done(True, f"task {task_id!r} retried as version {version}")

    def pause(self, series_id: str, note: str | None = None) -> Done:
        """Pause the series in every worker, with ``note`` (why, for whoever looks)."""
        check_key(series_id, "series_id")
        if note is not None:
            note = _check_note(note)
        generation, refused = self._set_state(series_id, PAUSED)
        if refused is not None:
            return refused
        sql = self.listing.sql
        statements: list[tuple[str, dict[str, Any]]] = [(sql.create_notes, {})]
        if note:
            statements.append((sql.put_note, {"series_id": series_id, "generation": generation,
                                              "note": note, "written": self.clock()}))
        else:
            statements.append((sql.drop_note, {"series_id": series_id}))
        self.db.execute(statements)
        return Done(True, f"series {series_id!r} paused")

    def resume(self, series_id: str) -> Done:
        """Resume the series; fire times that came due while paused are skipped."""
        check_key(series_id, "series_id")
        _, refused = self._set_state(series_id, ACTIVE)
        if refused is not None:
            return refused
        sql = self.listing.sql
        self.db.execute([(sql.create_notes, {}), (sql.drop_note, {"series_id": series_id})])
        return Done(True, f"series {series_id!r} resumed")

    def trigger(self, series_id: str) -> Done:
        """Run the series' work once now, as a one-shot task (see the module's docstring)."""
        check_key(series_id, "series_id")
        detail = self.listing.one_series(series_id, fires=0)
        if detail is None or detail.series.state == SERIES_CANCELLED:
            return Done(False, f"no active or paused series {series_id!r}")
        line = detail.series
        try:
            check_key(line.ref, "ref")
            check_key(line.queue, "queue")
            if not isinstance(detail.args, dict):
                raise BadRow(f"its arguments are {detail.args}")
            priority = check_priority(line.priority)
            args = encode_args(detail.args["args"], detail.args["kwargs"])
        except (TypeError, ValueError, OverflowError) as exc:
            raise BadRow(f"series {series_id!r} cannot run: {exc}") from None
        now = self.clock()
        stamp = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
        task_id = check_key(f"{series_id}@{stamp:%Y-%m-%dT%H:%M:%S.%fZ}", "series_id")
        self.store.schedule([NewTask(task_id, now, priority, line.ref, args,
                                     line.queue)])
        return Done(True, f"series {series_id!r}: one run now, as task {task_id!r}", task_id)

    def _set_state(self, series_id: str, state: str) -> tuple[int, Done | None]:
        """Set the state of the series' current generation: (that generation, None), or
        (0, what stopped it) if there is no active or paused series of that id, or it was
        cancelled or replaced between the read and the (conditional) write."""
        detail = self.listing.one_series(series_id, fires=0)
        generation = None if detail is None else detail.series.generation
        if (detail is None or detail.series.state not in (ACTIVE, PAUSED)
                or type(generation) is not int):
            return 0, Done(False, f"no active or paused series {series_id!r}")
        if not self.store.series_table().set_state(series_id, generation, state):
            return 0, Done(False, f"series {series_id!r} was cancelled or replaced meanwhile")
        return generation, None


def _check_note(note: Any) -> str:
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, not {type(note).__name__}")
    text = check_key(note.strip(), "note", limit=4 * MAX_NOTE)
    if len(text) > MAX_NOTE:
        raise ValueError(f"note is {len(text)} characters; at most {MAX_NOTE}")
    return text
