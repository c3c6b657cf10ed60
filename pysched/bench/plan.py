"""A benchmark run as a list of steps, each giving result rows.

A step is one unit of the progress bar: usually every competitor timed, in
turns, on one workload at one size. Rows are plain dicts so they go to JSON as they are;
every row names its ``section``, ``workload``, ``param`` (what ``size``
counts: n, capacity, k, tasks) and ``size``, and its ``competitor`` (key)
and ``label``; the rest are the figures of that section.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._timing import measure_in_turns
from .progress import Progress

Row = dict[str, Any]
# A row's identity and a build: ``build()`` draws inputs and returns a run,
# ``run()`` does the work and returns its operation count.
Timed = tuple[Row, Callable[[], Callable[[], int]]]
# Which competitors (by key) a run includes: quick looks time only some.
Keep = Callable[[str], bool]


def keep_all(key: str) -> bool:
    """The default Keep: every competitor."""
    return True


@dataclass(frozen=True)
class Step:
    """One measurement: ``run()`` returns its rows."""

    label: str  # shown beside the progress bar
    run: Callable[[], list[Row]]


def timed_group(label: str, entries: Sequence[Timed], budget: float) -> Step:
    """A step that times every ``(ident, build)`` in ``entries``, in turns.

    Builds draw their inputs when the step runs, not when the plan is made,
    so a long plan does not hold every input in memory at once.
    """

    def run() -> list[Row]:
        measured = measure_in_turns([build for _, build in entries], budget)
        return [{**ident, "ops": m.result, "seconds": m.seconds,
                 "ns_per_op": m.seconds * 1e9 / m.result, "samples": list(m.samples)}
                for (ident, _), m in zip(entries, measured, strict=True)]

    return Step(label, run)


def run_steps(steps: list[Step], progress: Progress) -> list[Row]:
    """Run every step in order, advancing the progress bar; all their rows."""
    rows: list[Row] = []
    progress.start(len(steps))
    for step in steps:
        progress.advance(step.label)
        rows.extend(step.run())
    progress.finish()
    return rows
