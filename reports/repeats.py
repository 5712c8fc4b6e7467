"""How far the same plan's measurements move between the rounds of one command: the floor
under any prediction's error. A case is judged against the median of its own rounds (the
best a single predicted time could do); where that is already more than 5% off, no model
can be within 5% of both rounds."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from corun.spec.validation import MeasuredCase


@dataclass(frozen=True)
class Repeats:
    """Cases measured in two or more rounds of one command, each case's distance (%) from
    the median of its own rounds."""

    deviations_pct: tuple[float, ...]

    def within(self, within_pct: float) -> str:
        """How many cases lie at most `within_pct` from their rounds' median, of how many."""
        d = self.deviations_pct
        if not d:
            return "-"
        inside = sum(x <= within_pct for x in d)
        return f"{inside} of {len(d)} ({100 * inside / len(d):.0f}%)"


def repeats_by(cases: Iterable[MeasuredCase],
               key: Callable[[MeasuredCase], str]) -> dict[str, Repeats]:
    """Per `key` group: the cases whose plan (command, workload, strategy) ran in two or
    more rounds, each against its rounds' median mean iteration."""
    rounds: dict[tuple, list[MeasuredCase]] = defaultdict(list)
    for c in cases:
        rounds[c.source, c.workload, c.strategy].append(c)
    devs: dict[str, list[float]] = defaultdict(list)
    for same in rounds.values():
        if len(same) < 2:
            continue
        mid = statistics.median(c.mean_iteration_ms for c in same)
        devs[key(same[0])] += [100 * abs(c.mean_iteration_ms / mid - 1) for c in same]
    return {g: Repeats(tuple(v)) for g, v in sorted(devs.items())}
