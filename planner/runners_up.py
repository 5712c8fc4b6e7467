"""The search's runners-up: the best plan it judged for each other schedule (the stages
its kernels are released at, and whether any node runs on the host CPU), best first.

Neighbouring schedules are often predicted within the cost model's error of the chosen
one (heavy-fused b16384: the whole pipeline at interaction_bwd 9.938 ms, at emb_fwd
9.953 ms), so which is fastest is for the GPU to say: `corun plan --runners-up K` writes
them beside the chosen plan, and bench/execute_gpu.py runs them ("corun-2", ...) in the
same rounds as the rest."""

from __future__ import annotations

from collections.abc import Iterable

from planner.types import Judged
from spec import Plan

NEAR_TIE_PCT = 1.5
"""A runner-up predicted this close to the chosen plan may well be faster on the GPU: the
median iteration-time error of 76 cases executed on the H200 and predicted again is
1.51% (mean 3.63%, `python bench/repredict.py`, bench/results/repredict_h200.md; with the
heavy rounds of 2026-11-30 added, 150 cases, 1.48%: bench/results/repredict_rounds_h200.md).
On heavy-fused b16384 (2026-11-30) the runner-up was predicted 0.15% behind and measured
0.6% ahead (bench/results/heavy_rounds_h200.md)."""


def schedule(plan: Plan) -> tuple:
    """What tells schedules apart: the release stages of the kernels (a multiset) and
    whether the host CPU preprocesses any node. Launch shapes, mappings and priority are
    tuned within a schedule."""
    return tuple(sorted(k.stage for k in plan.kernels)), bool(plan.cpu_nodes)


def runners_up(judged: Iterable[Judged], chosen: Plan, k: int) -> list[Judged]:
    """The best judged plan of each schedule other than the chosen plan's, the k best of
    them by predicted throughput (the first judged wins a tie)."""
    best: dict[tuple, Judged] = {}
    for j in judged:
        key = schedule(j.plan)
        if key not in best or j.throughput_samples_per_s > best[key].throughput_samples_per_s:
            best[key] = j
    best.pop(schedule(chosen), None)
    return sorted(best.values(), key=lambda j: -j.throughput_samples_per_s)[:k]


def describe(plan: Plan) -> str:
    """A schedule in words: where its kernels are released, and the host CPU's part."""
    stages = sorted({k.stage for k in plan.kernels})
    where = (f"kernel{'s' if len(plan.kernels) > 1 else ''} at {', '.join(stages)}"
             if stages else "no GPU kernel")
    return where + (", nodes on the host CPU" if plan.cpu_nodes else "")


def near_tie(chosen: Judged, other: Judged) -> str | None:
    """A caution when `other` (a runner-up) is predicted within NEAR_TIE_PCT of `chosen`:
    which one is faster is then for the GPU to say."""
    behind = 100 * (1 - other.throughput_samples_per_s / chosen.throughput_samples_per_s)
    if behind >= NEAR_TIE_PCT:
        return None
    return (f"caution: the next-best schedule ({describe(other.plan)}) is predicted "
            f"{behind:.2f}% behind the chosen plan ({describe(chosen.plan)}), within the "
            f"simulator's median error measured on the H200 ({NEAR_TIE_PCT}%): measure "
            "both")
