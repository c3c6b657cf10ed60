"""``pysched tasks``: a page of tasks, filtered by state, queue and name, next due first.

Each task is printed as its ``pysched.jobs.TaskInfo`` snapshot, the shape
``DurableScheduler.jobs()`` gives (``--json``: one object per task, with
``due`` in the store's wall seconds and ``due_wall`` as ISO 8601). Pages are
keyset pages (``--after`` the cursor the page before printed), each one index
range scan however large the table. Changes no task; the first listing of a
table builds the listing's indexes (``Listing.ensure_indexes``).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..durable.jobs import task_info
from ..durable.listing import FAILED_STATES, MAX_PAGE, TaskPage
from ..durable.moments import when
from ..jobs import TaskInfo, job_dict
from ._common import ExitCode, UsageError, add_store_arguments, public_target
from ._reads import guarded, key, listing, print_json, printable, table

__all__ = ["add_parser", "render", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``tasks`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "tasks", help="list tasks by state, queue and name, a page at a time",
        description="List the tasks of a durable schedule, next due first (--newest-first:"
                    " latest due first), a page at a time. Changes no task; the first"
                    " listing of a table builds its listing indexes.")
    add_store_arguments(parser)
    parser.add_argument("--state", action="append", default=[], metavar="STATE", type=key,
                        help="only tasks in this state (repeat for several; default: every"
                             " state)")
    parser.add_argument("--failed", action="store_true",
                        help="only failed and errored tasks, latest due first")
    parser.add_argument("--queue", metavar="QUEUE", type=key, help="only tasks on this queue")
    parser.add_argument("--name", metavar="NAME", type=key,
                        help="only tasks of this task name")
    parser.add_argument("--limit", type=_page_size, default=50, metavar="N",
                        help=f"tasks per page, 1 to {MAX_PAGE} (default: %(default)s)")
    parser.add_argument("--after", metavar="CURSOR",
                        help="the page after this cursor (printed at the end of a page)")
    parser.add_argument("--newest-first", action="store_true", help="latest due first")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def _page_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 < value <= MAX_PAGE:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_PAGE}, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    """Print one page of tasks; return the exit status (see ``ExitCode``)."""
    return guarded("tasks", args, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    states = list(args.state)
    if args.failed:
        states += [s for s in FAILED_STATES if s not in states]
    with listing(args) as reads:
        try:
            page = reads.tasks(states=states, queue=args.queue, name=args.name,
                               after=args.after, limit=args.limit,
                               newest_first=args.newest_first or args.failed)
        except ValueError as exc:
            raise UsageError(f"argument --after: {exc}") from exc  # the one argument left
    infos = snapshots(page)
    if args.json:
        return print_json({"store": public_target(args.store), "table": args.table,
                           "now": page.now, "tasks": [job_dict(t) for t in infos],
                           "next": page.next})
    print(render(page))
    return ExitCode.OK


def snapshots(page: TaskPage) -> list[TaskInfo]:
    """The tasks of ``page`` as snapshots, due on the store's clock (its wall seconds)."""
    return [task_info(t._asdict(), _store_clock) for t in page.tasks]


def _store_clock(wall: float) -> float:
    return wall


def _or_dash(value: object) -> str:
    return "-" if value is None else printable(value)


def render(page: TaskPage) -> str:
    """A page of tasks as text for a terminal."""
    if not page.tasks:
        return "  no tasks"
    # A due time no snapshot holds (text, NaN) is shown as the row holds it.
    rows = [[printable(t.task_id, 40), printable(t.state),
             when(t.due if t.due is not None else line.run_at, page.now),
             _or_dash(t.priority), _or_dash(t.version), printable(t.attempts),
             _or_dash(t.last_outcome), _or_dash(t.name), _or_dash(t.queue),
             printable(t.error or "", 60)]
            for t, line in zip(snapshots(page), page.tasks, strict=True)]
    lines = table(["TASK ID", "STATE", "DUE", "PRIORITY", "VERSION", "ATTEMPTS",
                   "LAST OUTCOME", "TASK", "QUEUE", "ERROR"], rows, right={3, 4, 5})
    if page.next is not None:
        lines += ["", f"More: add --after {page.next}"]
    return "\n".join(lines)
