"""How many examples a property test tries.

Each test names its full count. The default run tries a quarter of it (at
least MIN), so that a newcomer's ``python -m pytest`` stays short; with
PYSCHED_FULL_EXAMPLES=1 (.ci/run and the tests workflow set it) every test
tries its full count.
"""

from __future__ import annotations

import os

FULL = os.environ.get("PYSCHED_FULL_EXAMPLES") == "1"
SHARE = 4  # the default run tries 1/SHARE of each full count
MIN = 10


def examples(full: int) -> int:
    """``full`` under PYSCHED_FULL_EXAMPLES=1, else a quarter of it, at least MIN."""
    return full if FULL else max(MIN, full // SHARE)
