"""``current_fire()``: the fire time a recurring run is for, read from inside the run."""

from __future__ import annotations

from contextvars import ContextVar

from .series import Fire

__all__ = ["CURRENT_FIRE", "current_fire"]

# Set by the scheduler around each run of a series (a context variable, so
# threads and asyncio tasks each see their own).
CURRENT_FIRE: ContextVar[Fire | None] = ContextVar("pysched_current_fire", default=None)


def current_fire() -> Fire | None:
    """In a run of a recurring series: its ``Fire`` (``fire_time``, ``lateness``,
    ``count`` of fire times it stands for); None anywhere else."""
    return CURRENT_FIRE.get()
