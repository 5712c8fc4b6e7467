"""Where a run's slow iterations spend their extra time, from Measurement.per_iteration.

A median hides a tail: on the H200, co-running plans that released their kernel late in
a short step measured within 1% of ideal by median and 79-93% by throughput. Comparing the
slowest iterations with the typical ones, piece by piece (the training stream's wait for its
batch, its busy time, the host thread's pieces), says which part grew.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from corun.spec import Measurement


@dataclass(frozen=True)
class Tail:
    typical_ms: float
    """Mean iteration time of the middle half (25th to 75th percentile)."""
    slow_ms: float
    """Mean iteration time of the slowest `share`."""
    extra_ms: dict[str, float]
    """Per recorded piece (a duration: not the spans' `start_*`, which are positions in
    the step): its mean over the slow iterations minus over the typical ones."""


def tail(m: Measurement, share: float = 0.1) -> Tail | None:
    """The tail of `m`, or None without a per-iteration record (older measurements)."""
    per = m.per_iteration
    times = per.get("iteration", ())
    if len(times) < 8:
        return None
    order = sorted(range(len(times)), key=times.__getitem__)
    n = len(order)
    typical = order[n // 4 : max(n // 4 + 1, 3 * n // 4)]
    slow = order[n - max(1, round(share * n)):]

    def mean(key: str, idx: list[int]) -> float:
        return statistics.fmean(per[key][i] for i in idx)

    return Tail(mean("iteration", typical), mean("iteration", slow),
                {k: mean(k, slow) - mean(k, typical) for k in per
                 if k != "iteration" and not k.startswith("start_")})
