"""Run user code inside a call: a collection that fires at the k-th allocation of the call.

User code runs inside the core whenever an object is freed (``__del__``) and
the cyclic garbage collector runs at an allocation of a tracked object. To
test every point where that can happen, ``call_with_collection_at(k, ...)``
leaves one piece of cyclic garbage whose ``__del__`` calls back in, and sets
the collector's threshold so that it fires at the k-th tracked allocation of
the call; tests repeat a scenario for k = 1, 2, ... until the call makes fewer
than k allocations. Freelists would hide allocations, so the core's Task and
QueueEntry freelists are emptied first (by holding objects taken from them).

On CPython 3.12 and later a collection that an allocation starts runs at the
next check of the eval loop rather than inside the allocation: in the pure
twin that is still inside the call, in the core it is at its return.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

FREELIST_DRAIN = 64  # more than any freelist of the core holds


class Report:
    """Whether the finaliser ran, and what it raised."""

    def __init__(self) -> None:
        self.ran = False
        self.error: BaseException | None = None


class Finaliser:
    """Cyclic garbage whose ``__del__`` runs ``action`` when the collector frees it."""

    def __init__(self, action: Callable[[], Any], report: Report) -> None:
        self.action = action
        self.report = report
        self.cycle = self

    def __del__(self) -> None:
        try:
            self.action()
        except BaseException as exc:  # kept for the test: the collector would only print it
            self.report.error = exc
        self.report.ran = True


def drain_freelists(module: Any) -> list[Any]:
    """Objects taken from the core's freelists; hold them to keep the lists empty."""
    held = []
    for name in ("Task", "QueueEntry"):
        cls = getattr(module, name, None)
        if cls is not None and cls.__module__ == "pysched._core":
            held += [cls.__new__(cls) for _ in range(FREELIST_DRAIN)]
    return held


def call_with_collection_at(k: int, call: Callable[[], Any],
                            action: Callable[[], Any]) -> tuple[Any, bool]:
    """``call()`` with a collection at its k-th tracked allocation that runs ``action``.

    Returns the call's result and whether the finaliser ran inside the call.
    """
    thresholds = gc.get_threshold()
    enabled = gc.isenabled()
    report = Report()
    gc.collect()
    gc.disable()
    try:
        Finaliser(action, report)  # unreachable at once: cyclic garbage
        # The collector counts tracked allocations since the last collection
        # and runs when the count exceeds threshold0 (which is >= 1 here).
        gc.set_threshold(gc.get_count()[0] + k - 1, thresholds[1], thresholds[2])
        gc.enable()
        result = call()
        inside = report.ran
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()
        if not enabled:
            gc.disable()
    if report.error is not None and inside:
        raise AssertionError(f"the finaliser's call raised: {report.error!r}") from report.error
    return result, inside
