"""Counters: the named event counts of one scheduler, for ``stats()``.

Each count only grows, and only through ``add``, under the counters' own lock
(a leaf: nothing is called while it is held).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping

__all__ = ["COUNTERS", "Counters", "guarded"]

log = logging.getLogger("pysched.durable")

# What a DurableScheduler counts (its series count theirs: _series.SERIES_COUNTERS).
COUNTERS = ("claimed", "reruns", "completed", "failed", "errors", "retried", "not_recorded",
            "handed_back", "not_started", "lease_lapsed", "leases_lost", "stopped_by_close",
            "claim_rounds", "resyncs", "resyncs_skipped", "bad_rows", "store_errors", "repaired",
            "skew_refusals", "pruned")


class Counters:
    """A fixed set of named counts, each from 0. O(1) per ``add``."""

    def __init__(self, names: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(names, 0)

    def add(self, name: str, n: int = 1) -> None:
        """Count ``n`` more of ``name`` (KeyError for a name not counted here)."""
        with self._lock:
            self._counts[name] += n

    def add_all(self, counts: Mapping[str, int]) -> None:
        """``add`` each of ``counts`` at once."""
        with self._lock:
            for name, n in counts.items():
                self._counts[name] += n

    def __getitem__(self, name: str) -> int:
        return self._counts[name]

    def snapshot(self) -> dict[str, int]:
        """Every count, as of now."""
        with self._lock:
            return dict(self._counts)


def guarded(action: Callable[[], object], what: str, counters: Counters,
            counter: str = "store_errors", scope: str = "durable store") -> bool:
    """Run a chore; log a failure with its traceback (as "``scope``: ``what`` failed")
    and count it in ``counter``, instead of ending the thread. Returns whether it
    succeeded."""
    try:
        action()
    except Exception:
        log.exception("%s: %s failed", scope, what)
        counters.add(counter)
        return False
    return True
