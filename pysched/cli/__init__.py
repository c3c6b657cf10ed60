"""The ``pysched`` command: run a worker, and see and steer a durable schedule.

``worker`` and ``status`` (docs/worker.md); ``tasks``, ``describe``,
``cancel``, ``retry``, ``series`` and ``web`` (docs/operations.md).

Installed as a console script and reachable as ``python -m pysched``. One
module per command, each with ``add_parser(commands)`` and ``run(args)``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .. import IMPLEMENTATION
from .._version import __version__
from . import cancel, describe, retry, series, status, tasks, web, worker
from ._common import UsageError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command; return its exit status.

    Bad arguments exit with status 2 and argparse's message.
    """
    parser = argparse.ArgumentParser(
        prog="pysched", description="Run and inspect durable pysched schedules.")
    parser.add_argument("--version", action="version",
                        version=f"pysched {__version__} ({IMPLEMENTATION} core)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (worker, status, tasks, describe, cancel, retry, series, web):
        command.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as exc:
        commands.choices[args.command].error(str(exc))
