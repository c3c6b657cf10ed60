"""What an import of pysched costs, by ``python -X importtime``, for one or more trees in turns.

Each run is a fresh interpreter with ``PYTHONPATH`` set to one tree (a folder
holding a ``pysched`` package, compiled core included), run from a temporary
folder so that no other copy of pysched is found. The figure of a run is the
cumulative time of everything the statement imported: the sum of the
top-level ``-X importtime`` entries from the first ``pysched`` one on (the
interpreter's own start-up comes before). The trees run in turns, so a busy
machine slows them alike; the median and the minimum of the runs are printed.

Copy a tree before a change with ``git archive HEAD pysched | tar -x -C DIR``
and its built extension with ``cp pysched/_core*.so DIR/pysched/``.

Run: ``python benchmarks/import_time.py RUNS LABEL=TREE ...``, for example
``python benchmarks/import_time.py 21 before=/tmp/before after=.``; statements
other than ``import pysched`` and ``import pysched.durable`` with
``--statement STMT`` (repeatable).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

TOP_LEVEL = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")  # no indent: top level


def import_ms(tree: str, statement: str, cwd: str) -> float:
    """Milliseconds that ``statement`` spent importing, in a fresh interpreter on ``tree``."""
    check = f"import pysched, os; assert os.path.abspath(pysched.__file__).startswith({tree!r})"
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", f"{statement}\n{check}"],
                         env={**os.environ, "PYTHONPATH": tree}, cwd=cwd, capture_output=True,
                         text=True, check=True).stderr
    total, started = 0, False
    for line in err.splitlines():
        if (found := TOP_LEVEL.match(line)) is not None:
            started = started or found[2].startswith("pysched")
            total += int(found[1]) if started else 0
    return total / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=int)
    parser.add_argument("trees", nargs="+", metavar="LABEL=TREE")
    parser.add_argument("--statement", action="append", dest="statements")
    args = parser.parse_args()
    trees = {label: os.path.abspath(path) for label, _, path in
             (spec.partition("=") for spec in args.trees)}
    statements = args.statements or ["import pysched", "import pysched.durable"]
    times: dict[tuple[str, str], list[float]] = {(s, t): [] for s in statements for t in trees}
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(args.runs):
            for statement in statements:
                for label, tree in trees.items():
                    times[statement, label].append(import_ms(tree, statement, cwd))
    for (statement, label), runs in times.items():
        print(f"{statement:46} {label:10} median {statistics.median(runs):7.1f} ms"
              f"  min {min(runs):7.1f} ms  ({len(runs)} runs)")


if __name__ == "__main__":
    main()
