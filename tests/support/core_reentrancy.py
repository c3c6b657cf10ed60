"""Run user code inside a call: a collection that fires at the k-th allocation of the call.

User code runs inside the core whenever an object is freed (``__del__``) and
the cyclic garbage collector runs at an allocation of a tracked object. To
test every point where that can happen, ``call_with_collection_at(k, ...)``
leaves one piece of cyclic garbage whose ``__del__`` calls back in, and sets
the collector's threshold so that it fires at the k-th tracked allocation of
the call; tests repeat a scenario for k = 1, 2, ... until the call makes fewer
than k allocations. Freelists would hide allocations, so the core's Task and
QueueEntry freelists are emptied first (by holding objects taken from them).

The collector counts allocations net of frees, so an allocation that follows
a free (a temporary made and dropped) is never the first to pass a threshold.
The pure twin is therefore also tested with ``call_with_action_at_construction``:
the action runs as the k-th object of one of its own classes is built (at the
start of its ``__init__``, or in ``_shell``), which is where a finaliser that
the allocation starts would run.

On CPython 3.12 and later a collection that an allocation starts runs at the
next check of the eval loop rather than inside the allocation: in the pure
twin that is still inside the call, in the core it is at its return.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pysched import _bounded_queue_py, _scheduler_py

FREELIST_DRAIN = 128  # more than any freelist of the core holds


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
    gc.collect(0)  # young objects only: cheap, and it zeroes the count read below
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
        gc.collect(0)  # the finaliser, if it has not run: it is young garbage
        if not enabled:
            gc.disable()
    if report.error is not None and inside:
        raise AssertionError(f"the finaliser's call raised: {report.error!r}") from report.error
    return result, inside


TWIN_FILES = {module.__file__ for module in (_scheduler_py, _bounded_queue_py)}
CONSTRUCTORS = {"__init__", "_shell"}


def call_with_action_at_construction(k: int, call: Callable[[], Any],
                                     action: Callable[[], Any]) -> tuple[Any, bool]:
    """``call()``, running ``action`` as the twin builds the k-th object of its own classes.

    Returns the call's result and whether the action ran.
    """
    built = 0
    ran = False

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal built, ran
        code = frame.f_code
        if (event != "call" or code.co_name not in CONSTRUCTORS
                or code.co_filename not in TWIN_FILES):
            return
        built += 1
        if built == k:
            ran = True
            sys.setprofile(None)
            try:
                action()
            finally:
                sys.setprofile(profile)

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, ran


def injectors(impl: Any) -> list[Callable[[int, Callable[[], Any], Callable[[], Any]],
                                         tuple[Any, bool]]]:
    """The ways to run user code inside a call of ``impl``: see the module docstring."""
    if getattr(impl, "__name__", "") == "pysched._core":
        return [call_with_collection_at]
    return [call_with_collection_at, call_with_action_at_construction]


def runs_with_user_code_inside(impl: Any, make: Callable[[], Any], call: Callable[[Any], Any],
                               action: Callable[[Any], Any],
                               limit: int = 200) -> Iterator[tuple[Any, Any, str]]:
    """Each way to run user code inside a call, at each point k = 1, 2, ... in turn.

    For each, a fresh ``state = make()`` and ``call(state)`` with ``action(state)``
    run inside; yields ``(state, result, where)`` for the runs where it did.
    """
    held = drain_freelists(impl)
    fired = 0
    for inject in injectors(impl):
        for k in range(1, limit):
            state = make()
            result, inside = inject(k, lambda state=state: call(state),
                                    lambda state=state: action(state))
            if not inside:
                break
            fired += 1
            yield state, result, f"{inject.__name__}, k = {k}"
    del held
    assert fired, "the call allocated nothing: the harness tested nothing"
