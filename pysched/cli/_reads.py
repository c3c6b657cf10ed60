"""What the listing and steering commands share: opening the store, text for a terminal.

A store is opened to read first (read-only, so a wrong path or table is
reported and nothing is created), and only then, for an action, as a store.
Text read from a row is untrusted: ``printable`` shows its control
characters escaped, so a task id cannot move the cursor or clear the screen.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..durable.errors import BadRow
from ..durable.listing import Listing
from ..durable.moments import jsonable
from ..durable.reading import connect
from ..durable.steering import Done, Steering
from ..durable.store import check_key
from ..durable.stores import open_store
from ._common import ExitCode, UsageError, fail, first_line, public_target

__all__ = ["act", "guarded", "key", "listing", "print_json", "printable", "steering", "table"]


@contextmanager
def listing(args: argparse.Namespace) -> Iterator[Listing]:
    """The read layer over ``--store`` and ``--table``, its table checked."""
    try:
        db = connect(args.store)
    except ValueError as exc:
        raise UsageError(f"argument --store: {exc}") from exc
    try:
        reads = Listing(db, args.table)
        reads.check()
        yield reads
    finally:
        db.close()


@contextmanager
def steering(args: argparse.Namespace) -> Iterator[Steering]:
    """The actions on ``--store``, once a read found its table there."""
    with listing(args):
        pass
    store = open_store(args.store, table=args.table)
    db = connect(args.store, writable=True)
    try:
        yield Steering(store, db, Listing(db, args.table))
    finally:
        db.close()
        store.close()


def key(text: str) -> str:
    """An argparse type: text a store can hold as an id, a queue or a name."""
    try:
        return check_key(text, "the value")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def guarded(command: str, args: argparse.Namespace, work: Callable[[], int]) -> int:
    """``work()``, with a store that cannot be read or written reported as one line."""
    where = public_target(args.store)
    try:
        return work()
    except UsageError:
        raise
    except LookupError as exc:
        return fail(command, f"{where}: {exc.args[0] if exc.args else exc}")
    except Exception as exc:  # noqa: BLE001 - reported as one line, exit 1
        return fail(command, f"cannot use the store {where}: {first_line(exc)}")


def act(command: str, args: argparse.Namespace, action: Callable[[Steering], Done]) -> int:
    """Run one action on ``--store``, print what it did; status 1 if it changed nothing."""

    def work() -> int:
        with steering(args) as steer:
            try:
                done = action(steer)
            except BadRow as exc:  # the stored row cannot be acted on
                return fail(command, printable(first_line(exc)))
            except (TypeError, ValueError) as exc:  # the id or note, named in the message
                raise UsageError(str(exc)) from exc
        if not done.changed:
            return fail(command, printable(done.message))
        print(printable(done.message))
        return ExitCode.OK

    return guarded(command, args, work)


def print_json(data: Any) -> int:
    """Print ``data`` as JSON (what JSON cannot hold, as text); return ``ExitCode.OK``."""
    print(json.dumps(jsonable(data), indent=2, ensure_ascii=False))
    return ExitCode.OK


def printable(value: Any, width: int | None = None) -> str:
    """``value`` as one line of text, control characters escaped; cut to ``width``."""
    text = value if isinstance(value, str) else repr(value)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if width is not None and len(text) > width:
        text = text[:width - 3] + "..."
    return text


def table(headers: Sequence[str], rows: Sequence[Sequence[str]],
          right: Collection[int] = ()) -> list[str]:
    """Aligned columns, two spaces in; the columns in ``right`` aligned right. Every cell
    goes through ``printable``: a cell read from a row cannot drive the terminal."""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    out = []
    for row in [headers, *rows]:
        cells = [str(x).rjust(w) if i in right else str(x).ljust(w)
                 for i, (x, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  " + "  ".join(cells).rstrip())
    return out
