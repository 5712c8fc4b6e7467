"""The search's runners-up: plans to measure beside the chosen one (`corun plan
--runners-up K`, then `corun tune`), because which of several close predictions is fastest
is for the GPU to say.

The first runner-up is the best plan of the next-best schedule (the stages its kernels are
released at, and whether any node runs on the host CPU): the near tie the planner warns of
(heavy-fused b16384: the whole pipeline at interaction_bwd 9.938 ms, at emb_fwd 9.953 ms).
The rest differ most from what is already picked, within WINDOW_PCT of the chosen plan:
the plans of one schedule differ where the model is surest, and the model's errors lie
between unlike plans (launch shape, batch lead, fusion), so those are worth a measurement."""

from __future__ import annotations

from collections.abc import Iterable

from corun.planner.types import Judged
from corun.spec import Plan

NEAR_TIE_PCT = 1.5
"""A runner-up predicted this close to the chosen plan may well be faster on the GPU: the
median iteration-time error of the cases executed on the H200 and predicted again,
about 1.5%."""

WINDOW_PCT = 5.0
"""Runners-up after the first are drawn from plans predicted at most this much behind the
chosen one: the issue's bound on prediction error, and the span within which measured
order has reversed predicted order on the H200 (heavy-fused b16384: the whole pipeline in
1056 blocks at bottom_mlp_bwd predicted 3.8% behind the chosen plan, measured 0.2-1.0%
ahead in five runs.md, heavy_bmb_h200.md, tune_h200.md)."""


def schedule(plan: Plan) -> tuple:
    """What tells schedules apart: the release stages of the kernels (a multiset) and
    whether the host CPU preprocesses any node. Launch shapes, mappings and priority are
    tuned within a schedule."""
    return tuple(sorted(k.stage for k in plan.kernels)), bool(plan.cpu_nodes)


def decisions(plan: Plan) -> tuple:
    """A plan's decisions, one entry each: release stages, launch shapes (blocks, threads,
    a warp or a thread per row), batches ahead, whether the host CPU takes part, fusion
    (which nodes share a kernel), stream priority, feature mapping."""
    return (tuple(sorted(k.stage for k in plan.kernels)),
            tuple(sorted((k.blocks, k.threads_per_block, k.warp_rows) for k in plan.kernels)),
            plan.batches_ahead,
            bool(plan.cpu_nodes),
            tuple(sorted(tuple(sorted(k.nodes)) for k in plan.kernels)),
            plan.training_priority_high,
            tuple(sorted((f, m.value) for f, m in plan.feature_mapping.items())))


def differences(a: Plan, b: Plan) -> int:
    """How many of their decisions two plans make differently (0: the same plan)."""
    return sum(x != y for x, y in zip(decisions(a), decisions(b)))


def _best(plans: Iterable[Judged]) -> Judged | None:
    """The fastest predicted (max keeps the first of equals: the first judged wins a tie)."""
    return max(plans, key=lambda j: j.throughput_samples_per_s, default=None)


def runners_up(judged: Iterable[Judged], chosen: Plan, k: int) -> list[Judged]:
    """Up to k plans to measure beside `chosen`: the best of the next-best schedule, then,
    one at a time, the plan within WINDOW_PCT of the chosen one that differs in the most
    decisions from its nearest already picked (the chosen plan included), ties to the
    faster prediction."""
    pool = [j for j in judged if j.plan.kernels or j.plan.cpu_nodes]  # not the ideal
    mine = next((j for j in pool if j.plan == chosen), None)
    first = _best(j for j in pool if schedule(j.plan) != schedule(chosen))
    if k <= 0 or first is None:
        return []
    picked = [first]
    top = (mine or _best(pool)).throughput_samples_per_s
    pool = [j for j in pool if j.throughput_samples_per_s >= top * (1 - WINDOW_PCT / 100)]
    while len(picked) < k:
        apart = {id(j): min(differences(j.plan, p) for p in [chosen, *(q.plan for q in picked)])
                 for j in pool}
        most = max(apart.values(), default=0)
        if most == 0:
            break
        picked.append(_best(j for j in pool if apart[id(j)] == most))
    return picked


def describe(plan: Plan) -> str:
    """A schedule in words: where its kernels are released, and the host CPU's part."""
    stages = sorted({k.stage for k in plan.kernels})
    where = (f"kernel{'s' if len(plan.kernels) > 1 else ''} at {', '.join(stages)}"
             if stages else "no GPU kernel")
    return where + (", nodes on the host CPU" if plan.cpu_nodes else "")


