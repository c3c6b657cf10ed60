"""What the commands share: the store arguments, how a store is named in output, and failures.

A command that cannot do its job prints one line to stderr, ``pysched
COMMAND: what went wrong``, and returns a status from ``ExitCode``; argparse
itself exits with status 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import enum
import sys
from urllib.parse import urlsplit, urlunsplit

from .._validate import INT64_MAX
from ..durable._sql import check_table
from ..durable.stores import SQLITE, parse_store_target

__all__ = ["ExitCode", "UsageError", "add_store_arguments", "count", "fail", "first_line",
           "positive_int", "public_target"]


class ExitCode(enum.IntEnum):
    """Exit statuses of the ``pysched`` commands (docs/worker.md lists them)."""

    OK = 0
    FAILED = 1  # could not start or could not read: store, import or registry
    USAGE = 2  # bad arguments (argparse's own status)
    ABANDONED = 3  # stopped with tasks still running at the end of the grace period


class UsageError(Exception):
    """A bad argument found after parsing: ``main`` reports it as argparse does (status 2)."""


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="URL", type=_store_target,
                        help="a postgresql:// URL or the path of a SQLite file")
    parser.add_argument("--table", default="pysched_tasks", type=_table_name,
                        help="the table of the schedule (default: %(default)s)")


def _store_target(text: str) -> str:
    """``text`` if it names a database other processes can reach: a URL or a SQLite file."""
    try:
        kind, location = parse_store_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    # SQLite opens "" and ":memory:" as a database private to one connection:
    # a schedule there would be lost, and its own connections disagree on it.
    if kind == SQLITE and location in ("", ":memory:"):
        raise argparse.ArgumentTypeError(
            f"{text!r} names no SQLite file: give the path of one (or a postgresql:// URL)")
    return text


def _table_name(text: str) -> str:
    try:
        return check_table(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole_number(text: str, least: int) -> int:
    """``text`` as an int in ``least``..INT64_MAX (the largest count the core takes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be >= {least}, got {value}")
    if value > INT64_MAX:
        raise argparse.ArgumentTypeError(f"must be <= {INT64_MAX}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    return _whole_number(text, 1)


def count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    return _whole_number(text, 0)


def public_target(target: str) -> str:
    """``target`` as it may be printed: a URL's password is replaced by ``***``."""
    try:
        parts = urlsplit(target)
    except ValueError:
        return target
    if parts.password is None:
        return target
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def first_line(exc: BaseException) -> str:
    """The first non-empty line of ``exc``'s message, or its type's name."""
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


def fail(command: str, message: str) -> ExitCode:
    """Print ``message`` as the command's one-line error; return ``ExitCode.FAILED``."""
    print(f"pysched {command}: {message}", file=sys.stderr)
    return ExitCode.FAILED
