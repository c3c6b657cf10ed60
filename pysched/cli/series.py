"""``pysched series pause|resume|trigger ID``: steer a durable recurring series.

``pause`` stops new runs in every worker (with ``--note``, why: shown by
``describe`` and the dashboard), ``resume`` starts them again (fire times that
came due while paused are skipped), ``trigger`` runs the series' work once
now, as a one-shot task named ``ID@<UTC time>``. Exit status 1 when there is
no active or paused series of that id.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..durable.steering import MAX_NOTE
from ._common import add_store_arguments
from ._reads import act, key

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``series`` command and its actions to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "series", help="pause, resume or trigger a recurring series",
        description="Steer a durable recurring series in every worker.")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    pause = actions.add_parser("pause", help="start no more runs until resumed",
                               description="Start no more runs of the series, in any worker,"
                                           " until it is resumed.")
    pause.add_argument("--note", metavar="TEXT",
                       help=f"why it is paused (at most {MAX_NOTE} characters)")
    resume = actions.add_parser("resume", help="start runs again",
                                description="Resume the series; fire times that came due"
                                            " while it was paused are skipped.")
    trigger = actions.add_parser("trigger", help="run it once now",
                                 description="Run the series' work once now, as a one-shot"
                                             " task named ID@<UTC time>.")
    for action in (pause, resume, trigger):
        action.add_argument("series_id", metavar="ID", type=key, help="the series id")
        add_store_arguments(action)
        action.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the chosen action; return the exit status (see ``ExitCode``)."""
    if args.action == "pause":
        return act("series pause", args, lambda steer: steer.pause(args.series_id, args.note))
    if args.action == "resume":
        return act("series resume", args, lambda steer: steer.resume(args.series_id))
    return act("series trigger", args, lambda steer: steer.trigger(args.series_id))
