"""Many interval series: pysched's ThreadPoolScheduler beside APScheduler 3's BackgroundScheduler.

``--series`` interval series with periods of 1 to 60 s, the same for both,
run for a window of ``--seconds``; each competitor ``--repeats`` times, in
turns, each turn in a fresh process. Reports the fire times expected and run,
any missing, run twice or early, start lateness p50/p99/max, and the process's
CPU time per fire. What is measured and how: ``pysched.bench.calendar_workloads``.

Run: ``nice python benchmarks/bench_calendar.py [--series 100000] [--seconds 60] [--freeze]
[--repeats 3] [--workers 10] [--json FILE]`` (APScheduler 3 from the ``bench``
extra; without it pysched runs alone).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from pysched.bench import calendar_workloads as calendar


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    parse = argparse.ArgumentParser(description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parse.add_argument("--series", type=int, default=100_000)
    parse.add_argument("--seconds", type=int, default=60, help="the window, whole seconds")
    parse.add_argument("--repeats", type=int, default=3)
    parse.add_argument("--workers", type=int, default=10,
                       help="threads of each (APScheduler's default ThreadPoolExecutor: 10)")
    parse.add_argument("--seed", type=int, default=0)
    parse.add_argument("--lead", type=float, default=None,
                       help="seconds to add the series before the window starts "
                            "(default: 5 + 0.4 ms per series)")
    parse.add_argument("--drain", type=float, default=10.0,
                       help="seconds after the window to wait for its last fire times")
    parse.add_argument("--only", choices=calendar.COMPETITORS, action="append",
                       help="run only this competitor (repeatable)")
    parse.add_argument("--freeze", action="store_true",
                       help="gc.freeze() in every competitor once its series are added")
    parse.add_argument("--json", metavar="FILE", help="write every turn's figures here")
    args = parse.parse_args(argv)
    competitors = args.only or list(calendar.COMPETITORS)
    if calendar.APSCHEDULER in competitors and not calendar.apscheduler_available():
        print("note: APScheduler 3 is not installed (pip install 'apscheduler<4'): "
              "pysched runs alone", file=sys.stderr)
        competitors.remove(calendar.APSCHEDULER)
    result = calendar.compare(args.series, args.seconds, args.repeats, workers=args.workers,
                              seed=args.seed, lead=args.lead, drain=args.drain,
                              competitors=competitors, freeze=args.freeze,
                              progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(calendar.render(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return result


if __name__ == "__main__":
    main()
