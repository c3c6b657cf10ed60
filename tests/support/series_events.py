"""Listeners for tests written about series events alone.

A scheduler's ``add_listener(fn)`` hands ``fn`` every event, task events
(``pysched.events.TaskEvent``) included; tests about what a series decided
keep only the series' own (``pysched.calendar.Event``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pysched.calendar import Event


def series_only(fn: Callable[[Event], object]) -> Callable[[Any], None]:
    """A listener that passes ``fn`` the series events only."""
    def listener(event: Any) -> None:
        if isinstance(event, Event):
            fn(event)
    return listener
