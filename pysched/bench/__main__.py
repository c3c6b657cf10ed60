"""``python -m pysched.bench``: the Cython core against its pure-heapq twin.

Quick mode (the default) stops at n = 100,000; ``--full`` goes to 1,000,000.
"""

from __future__ import annotations

import argparse
import sys

from . import memory, workloads
from ._timing import median_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pysched.bench", description=__doc__)
    parser.add_argument("--full", action="store_true", help="sizes up to 1,000,000")
    args = parser.parse_args(argv)

    try:
        from pysched._core import Scheduler as CoreScheduler
    except ImportError:
        print("pysched's compiled core is not installed: nothing to compare.", file=sys.stderr)
        return 1
    from pysched._scheduler_py import Scheduler as PureScheduler

    sizes = [1_000, 10_000, 100_000] + ([1_000_000] if args.full else [])
    print(f"{'workload':<12}{'n':>10}{'core ns/op':>12}{'twin ns/op':>12}{'speedup':>9}")
    for n in sizes:
        repeats = 5 if n <= 100_000 else 3
        core = median_seconds(workloads.composite(CoreScheduler, n), repeats)
        pure = median_seconds(workloads.composite(PureScheduler, n), repeats)
        ops = workloads.composite(CoreScheduler, n)()
        print(f"{'composite':<12}{n:>10,}{core * 1e9 / ops:>12.0f}{pure * 1e9 / ops:>12.0f}"
              f"{pure / core:>8.1f}x")
    n = 1_000_000 if args.full else 100_000
    core_bytes, pure_bytes = memory.bytes_per_task("c", n), memory.bytes_per_task("py", n)
    print(f"\nresident bytes per pending task at n = {n:,}: "
          f"core {core_bytes:.0f}, twin {pure_bytes:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
