"""Cron.next_fire inside a repeated hour (DST fall-back) against elsewhere, per call.

A per-second expression matches 3,600 local times in the repeated hour, each
of them twice; a search that walks them costs milliseconds. Each row times
``next_fire`` from 60 instants spread over one stretch (an ordinary hour, the
hour before the change, its first pass and its second pass), the median of
``--repeat`` rounds, in microseconds per call::

    python benchmarks/cron_repeated_hour.py [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timezone

from pysched import Cron

ZONE = "America/New_York"  # 2 Nov 2025: 02:00 EDT becomes 01:00 EST at 06:00 UTC
CHANGE = datetime(2025, 11, 2, 6, 0, tzinfo=timezone.utc).timestamp()
HOUR = 3600.0
STRETCHES = {
    "ordinary hour": CHANGE - 30 * HOUR,
    "hour before": CHANGE - 2 * HOUR,
    "first pass": CHANGE - HOUR,
    "second pass": CHANGE,
}
EXPRESSIONS = ["* * * * * *", "*/7 * * * * *", "15 * * * * *", "*/7 30-59 1 * * *"]
CALLS = 60


def per_call(cron: Cron, start: float, repeat: int) -> float:
    """Median microseconds per next_fire from CALLS instants one minute apart from ``start``."""
    points = [start + 60.0 * k + 0.5 for k in range(CALLS)]
    rounds = []
    for _ in range(repeat):
        began = time.perf_counter()
        for t in points:
            cron.next_fire(t)
        rounds.append((time.perf_counter() - began) / CALLS * 1e6)
    return statistics.median(rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds per row")
    args = parser.parse_args(argv)
    heads = list(STRETCHES)
    print(f"{'expression':<20} {'ambiguous':<9} " + " ".join(f"{h:>13}" for h in heads)
          + "   (us per next_fire, median)")
    for expr in EXPRESSIONS:
        for ambiguous in ("first", "second", "both"):
            cron = Cron(expr, tz=ZONE, ambiguous=ambiguous)
            cells = [per_call(cron, start, args.repeat) for start in STRETCHES.values()]
            print(f"{expr:<20} {ambiguous:<9} " + " ".join(f"{c:>13,.0f}" for c in cells))


if __name__ == "__main__":
    main()
