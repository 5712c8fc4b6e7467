"""Strategies measured in rounds (each round runs every strategy once, in one process):
per strategy the median over the rounds of its mean iteration (the throughput's) and its
range, its share of each round's own ideal, how often it was the round's fastest, and
the share of gpu-sequential's gap to ideal it closed (per round, then the median).
Comparing within a round takes out what moves every strategy of a round alike: a lent
host's pace drifts by several percent between commands (README, "On the machine that
will train, calibrate")."""

from __future__ import annotations

import re
import statistics
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

IDEAL, SEQUENTIAL = "ideal", "gpu-sequential"


def record_iteration_ms(record: dict) -> float:
    """A Measurement record's (its JSON) mean iteration, as its throughput counts it, by
    which rounds compare strategies (spec.measurement.mean_iteration_ms)."""
    from corun.spec.measurement import mean_iteration_ms

    return mean_iteration_ms(record["throughput_samples_per_s"], record["batch_per_gpu"],
                             record["gpu_count"])


def update_grid(strategy: str) -> int | None:
    """The fused embedding update's blocks an SM a strategy label runs on: "+ub<N>" or "-ub<N>"
    (corun tune's grid variants); None on the trainer's default grid."""
    m = re.search(r"[+-]ub(\d+)(?=\+|$)", strategy)
    return int(m.group(1)) if m else None


def grid_baselines(grid: int | None) -> tuple[str, str]:
    """The labels of ideal and gpu-sequential on update grid `grid` (None: the default)."""
    return (IDEAL, SEQUENTIAL) if grid is None else (f"{IDEAL}+ub{grid}",
                                                     f"{SEQUENTIAL}+ub{grid}")


def gap_baselines(strategy: str, names) -> tuple[str, str]:
    """The ideal and gpu-sequential a strategy's recovery is taken against: those on its
    own update grid where `names` (a round's strategies) has both, else the defaults'. A
    plan run on a faster grid than ideal's would read as recovering more than all of a
    gap it was not part of."""
    own = grid_baselines(update_grid(strategy))
    return own if all(s in names for s in own) else grid_baselines(None)


def is_ideal(strategy: str) -> bool:
    """Whether a strategy label is ideal or a variant of it ("ideal+upd92": no
    preprocessing, the training step run another way): never a round's fastest."""
    return strategy.split("+")[0] == IDEAL


@dataclass(frozen=True)
class RoundStats:
    """One strategy over the rounds that measured it."""

    strategy: str
    rounds: int
    median_ms: float
    min_ms: float
    max_ms: float
    of_ideal_pct: float | None
    """Median over rounds of the round's ideal iteration over this one's (None: no round
    measured ideal)."""
    of_ideal_min_pct: float | None
    of_ideal_max_pct: float | None
    wins: int | None
    """Rounds in which it was the fastest strategy other than ideal and its variants
    (None for those)."""
    recovered_pct: float | None
    """Median over rounds of (gpu-sequential - this) / (gpu-sequential - ideal), in
    percent (None where no round measured both with gpu-sequential slower than ideal);
    on a strategy's own update grid where the round ran both there (gap_baselines)."""


def round_stats(times_ms: Mapping[Hashable, Mapping[str, float]]) -> list[RoundStats]:
    """{round: {strategy: iteration ms}} -> one row per strategy, in the order they first
    appear. The callers give each round's mean iteration (record_iteration_ms)."""
    names = list(dict.fromkeys(s for t in times_ms.values() for s in t))
    wins = {s: 0 for s in names}
    for t in times_ms.values():
        others = {s: v for s, v in t.items() if not is_ideal(s)}
        if others:
            wins[min(others, key=others.get)] += 1
    out = []
    for s in names:
        times = [t[s] for t in times_ms.values() if s in t]
        shares = [100 * t[IDEAL] / t[s] for t in times_ms.values() if s in t and IDEAL in t]
        recovered = []
        for t in times_ms.values():
            ideal, seq = gap_baselines(s, t)
            if s in t and ideal in t and seq in t and t[seq] > t[ideal]:
                recovered.append(100 * (t[seq] - t[s]) / (t[seq] - t[ideal]))
        out.append(RoundStats(
            s, len(times), statistics.median(times), min(times), max(times),
            statistics.median(shares) if shares else None,
            min(shares) if shares else None, max(shares) if shares else None,
            None if is_ideal(s) else wins[s],
            statistics.median(recovered) if recovered else None))
    return out


def turned_order(cases: list[str], rounds: int) -> list[tuple[int, str]]:
    """(round, case) in the order rounds run them: every round runs each case once, each
    round's order turned by one more, so that no case always runs first after another."""
    n = len(cases)
    return [(r, cases[(r + k) % n]) for r in range(rounds) for k in range(n)]
