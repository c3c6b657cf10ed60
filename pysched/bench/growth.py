"""Does the core's cost per operation grow no faster than log n?

The check, on measured figures: divide ns/op by log2(n) at every size; the
cost is "O(log n)" when that normalised cost never exceeds FACTOR times its
value at the smallest size. From n = 1,000 to 1,000,000, log2 n doubles, so
the check allows ns/op to grow up to 2 x FACTOR = 6x. FACTOR is not 1
because the memory hierarchy adds a constant per heap level once the heap
outgrows the caches (about 10^4 entries fit in L2, 10^6 fit in no cache),
which slows every level without adding levels. What it rules out: a cost of
n^(1/3) per operation would make the ratio 5, n^(1/2) 16, O(n) 500.

Also reported: the exponent ``k`` of the least-squares fit ns/op ~ n^k on a
log-log scale (log n over this range fits k of about 0.1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

FACTOR = 3.0
# The check needs sizes that span this ratio; fewer decades prove nothing.
MIN_SPAN = 100


@dataclass(frozen=True)
class GrowthCheck:
    """The verdict for one workload."""

    sizes: tuple[int, ...]
    normalised: tuple[float, ...]  # ns/op / log2(n), per size
    ratios: tuple[float, ...]  # normalised / normalised at the smallest size
    exponent: float  # k in ns/op ~ n^k, least squares on log-log
    factor: float

    @property
    def worst(self) -> float:
        return max(self.ratios)

    @property
    def ok(self) -> bool:
        return self.worst <= self.factor


def fitted_exponent(points: Mapping[int, float]) -> float:
    """The slope of log(ns/op) against log(n), least squares."""
    xs = [math.log(n) for n in points]
    ys = [math.log(cost) for cost in points.values()]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def check(ns_per_op: Mapping[int, float], factor: float = FACTOR) -> GrowthCheck | None:
    """Check one workload's {n: ns/op}; None when the sizes span less than MIN_SPAN."""
    sizes = tuple(sorted(n for n in ns_per_op if n >= 2))
    if len(sizes) < 2 or sizes[-1] < MIN_SPAN * sizes[0]:
        return None
    normalised = tuple(ns_per_op[n] / math.log2(n) for n in sizes)
    ratios = tuple(value / normalised[0] for value in normalised)
    exponent = fitted_exponent({n: ns_per_op[n] for n in sizes})
    return GrowthCheck(sizes, normalised, ratios, exponent, factor)
