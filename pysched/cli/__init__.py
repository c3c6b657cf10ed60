"""The ``pysched`` command: ``pysched worker`` and ``pysched status`` (docs/worker.md).

Installed as a console script and reachable as ``python -m pysched``. One
module per command, each with ``add_parser(commands)`` and ``run(args)``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import status, worker
from ._common import UsageError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command; return its exit status.

    Bad arguments exit with status 2 and argparse's message.
    """
    parser = argparse.ArgumentParser(
        prog="pysched", description="Run and inspect durable pysched schedules.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (worker, status):
        command.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as exc:
        commands.choices[args.command].error(str(exc))
