"""A benchmark run as a list of steps, each giving result rows.

A step is one unit of the progress bar: usually one competitor timed on one
workload at one size. Rows are plain dicts so they go to JSON as they are;
every row names its ``section``, ``workload``, ``param`` (what ``size``
counts: n, capacity, k, tasks) and ``size``, and its ``competitor`` (key)
and ``label``; the rest are the figures of that section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._timing import measure
from .progress import Progress

Row = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """One measurement: ``run()`` returns its rows."""

    label: str  # shown beside the progress bar
    run: Callable[[], list[Row]]


def timed_step(label: str, ident: Row, build: Callable[[], Callable[[], int]],
               budget: float) -> Step:
    """A step that times ``build()()`` (which returns its operation count).

    ``build`` draws the inputs when the step starts, not when the plan is
    made, so a long plan does not hold every input in memory at once.
    """

    def run() -> list[Row]:
        measured = measure(build(), budget)
        ops = measured.result
        return [{**ident, "ops": ops, "seconds": measured.seconds,
                 "ns_per_op": measured.seconds * 1e9 / ops,
                 "samples": list(measured.samples)}]

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
