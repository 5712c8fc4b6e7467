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
