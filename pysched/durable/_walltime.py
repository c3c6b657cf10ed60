"""The wall instants a durable schedule keeps: those of a ``datetime``, years 1 to 9999 UTC.

Every time a durable store holds (a task's ``run_at``, a series' ``created`` and
fire times) is a wall instant in POSIX seconds, and everything that reads one
back (a trigger's calendar arithmetic, ``pysched status``, the dashboard) turns it
into a ``datetime``. A float beyond that range is a number, not a time: it is
refused by name where it enters, never stored.
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["WALL_MAX", "WALL_MIN", "check_wall"]

WALL_MIN = datetime.min.replace(tzinfo=timezone.utc).timestamp()
WALL_MAX = datetime.max.replace(tzinfo=timezone.utc).timestamp()


def check_wall(wall: float, name: str, given: object) -> None:
    """Raise ValueError naming ``name`` (whose value was ``given``) unless the wall instant
    ``wall`` it comes to is one a ``datetime`` can hold."""
    if not WALL_MIN <= wall <= WALL_MAX:
        raise ValueError(f"{name} {given!r} comes to the wall instant {wall!r}, beyond any date"
                         " a durable store keeps (years 1 to 9999 UTC)")
