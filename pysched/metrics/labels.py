"""Bounded label values: the first ``limit`` distinct values pass, later ones fold into ``"other"``.

A metric's series are the product of its labels' values, so one unbounded
label (a task id, the qualname of each of many closures) grows a scrape and
the monitoring system's memory without end. Each label that comes from the
user's code goes through a ``BoundedValues``: the first ``limit`` distinct
values it sees are kept as they are, every value after that is reported as
``OTHER``, and ``folded`` counts how many readings were folded.
"""

from __future__ import annotations

import threading

__all__ = ["OTHER", "UNNAMED", "BoundedValues"]

OTHER = "other"
# The value of a label whose event carried none (a task without a name or queue).
UNNAMED = ""


class BoundedValues:
    """At most ``limit`` distinct values, plus ``OTHER``. O(1) per ``get``; thread-safe."""

    __slots__ = ("limit", "folded", "_kept", "_lock")

    def __init__(self, limit: int, what: str = "limit") -> None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"{what} must be an int, not {type(limit).__name__}")
        if limit < 1:
            raise ValueError(f"{what} must be at least 1, got {limit}")
        self.limit = limit
        self.folded = 0
        # Invariant: len(_kept) <= limit; a value once kept stays kept, so a
        # series never changes its label after it first appears.
        self._kept: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, value: object) -> str:
        """``value`` as a label: itself (as str) while there is room, else ``OTHER``."""
        if value is None:
            return UNNAMED
        text = value if isinstance(value, str) else str(value)
        kept = self._kept.get(text)  # the hot path: a dict read, no lock
        if kept is not None:
            return kept
        with self._lock:
            if text in self._kept:
                return text
            if len(self._kept) < self.limit:
                self._kept[text] = text
                return text
            self.folded += 1
            return OTHER

    def __len__(self) -> int:
        return len(self._kept)
