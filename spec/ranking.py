"""How the planner ranks strategies by their predictions: runners-up are named
"corun-<N>", and strategies predicted alike (to ALIKE_DIGITS decimals of a millisecond)
rank in the planner's order: its choice, its runners-up by rank, then the rest as run.
`corun tune` ranks its rounds this way, and the validation tables count picks the same."""

from __future__ import annotations

import re
from collections.abc import Sequence

CHOICE = "corun"
"""The planner's chosen plan."""

ALIKE_DIGITS = 4
"""Predictions equal to this many decimals of a millisecond (0.1 us) are alike: the host
thread paces many plans to the same step, and a cap or variant the simulator does not
model leaves a plan's prediction as its base's, but for rounding."""


def runner_up_label(rank: int) -> str:
    """The strategy name of runner-up `rank` (2: the next-best schedule's best plan; 3 on:
    the plans most unlike those before them, planner/runners_up.py)."""
    return f"{CHOICE}-{rank}"


def runner_up_rank(strategy: str) -> int | None:
    """The rank N >= 2 of a runner-up "corun-<N>" (runner_up_label's inverse), else None."""
    m = re.fullmatch(rf"{CHOICE}-(\d+)", strategy)
    return int(m[1]) if m and int(m[1]) >= 2 else None


def planner_order(strategy: str, run_order: Sequence[str] = ()) -> int:
    """Where the planner puts `strategy` in a predicted tie: its choice first, then its
    runners-up by rank, then the rest in `run_order` (the order they ran in)."""
    if strategy == CHOICE:
        return 0
    rank = runner_up_rank(strategy)
    if rank is not None:
        return rank - 1
    return 1000 + (list(run_order).index(strategy) if strategy in run_order else 0)


def predicted_rank_key(predicted_ms: float, strategy: str,
                       run_order: Sequence[str] = ()) -> tuple[float, int, str]:
    """The sort key that ranks strategies by prediction, alike ones in the planner's order
    (the name last, so the order is total)."""
    return round(predicted_ms, ALIKE_DIGITS), planner_order(strategy, run_order), strategy
