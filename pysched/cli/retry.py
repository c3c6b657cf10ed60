"""``pysched retry ID``: put a failed or errored task back as a new version due now.

What ``DurableScheduler.retry`` does, from outside: one store write, its
attempts counted from 1 again. Exit status 1 when the task is not failed or
error.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_store_arguments
from ._reads import act, key

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``retry`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "retry", help="run a failed or errored task again, now",
        description="Put a failed or errored task back as a new version due now, its"
                    " attempts counted from 1.")
    parser.add_argument("task_id", metavar="ID", type=key, help="the task id")
    add_store_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Retry; return the exit status (see ``ExitCode``)."""
    return act("retry", args, lambda steer: steer.retry(args.task_id))
