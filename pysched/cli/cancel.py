"""``pysched cancel ID``: cancel a task's pending or running version and a series of that id.

What ``DurableScheduler.cancel`` does, from outside: one store write each, and
every worker follows. A version already running runs on. Exit status 1
when nothing of the id was pending, running or an active series.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_store_arguments
from ._reads import act, key

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``cancel`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "cancel", help="cancel a pending or running task, or a series",
        description="Cancel the pending or running version of a task and end a series of"
                    " that id, in every worker. A version already running runs on.")
    parser.add_argument("task_id", metavar="ID", type=key, help="the task or series id")
    add_store_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Cancel; return the exit status (see ``ExitCode``)."""
    return act("cancel", args, lambda steer: steer.cancel(args.task_id))
