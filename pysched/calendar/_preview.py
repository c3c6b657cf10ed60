"""The bound on how many fire times one preview lists."""

from __future__ import annotations

from .._validate import check_capacity

__all__ = ["MAX_PREVIEW", "check_preview_count"]

# The most fire times one preview lists (``Cron.preview``, a series'
# ``next_fire_times``), as many as a series decides at once (``SCAN_LIMIT``):
# each costs a search, so a count with no bound could hold the caller, and the
# lock a series handle reads under, for minutes. A longer list is read in
# pieces, each after the last fire time of the one before.
MAX_PREVIEW = 1_000


def check_preview_count(n: object, name: str = "n") -> int:
    """``n`` as an int from 0 to ``MAX_PREVIEW``, or an exception naming ``name``."""
    count = check_capacity(n, name)
    if count > MAX_PREVIEW:
        raise ValueError(f"{name} must be at most {MAX_PREVIEW} fire times, got {count}")
    return count
