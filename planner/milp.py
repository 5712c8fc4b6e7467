"""Exact fusion + schedule for one GPU as a MILP (SciPy's milp, HiGHS), for small
instances, to measure how far the local search is from optimal.

Model (the analytic cost model, linearised). One fused kernel per release stage s
(or before the iteration); binary x[u, s] puts unit u in it, y[s] says the kernel
exists. Its standalone time is K_s = L y_s + sum_u a_u x[u, s] (L: host launch of a
fused group; a_u: unit u's device time). A kernel released at stage s does p[s, j] ms
of its standalone work during each stage j >= s and the rest, d_s, after the last stage
(the trainer stalls). Stage j (standalone T_j, co-run factors f_s for the stage and f_k
for the kernel) offers at most P_j = T_j f_s / f_k ms of kernel progress, and each ms
done there lengthens the stage by c_j = f_k (1 - 1/f_s). Before the iteration a kernel
costs its K. Minimise sum c_j p[s, j] + sum d_s + K_before. (The stream's order among
kernels is relaxed: an optimistic model.) The solution is then judged by the simulator
like any other plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from corun.costmodel import AnalyticCostModel, kernel_work, shard_tables, stage_work
from corun.costmodel.analytic import PRE_KERNEL_LAUNCH_MS
from corun.planner.judge import SimJudge
from corun.planner.types import Judged
from corun.planner.units import units_of
from corun.sim.strategy import default_launch
from corun.spec import BEFORE_ITERATION, FusedKernel, Plan, SpecError, stages_for
from scipy.optimize import Bounds, LinearConstraint, milp


@dataclass(frozen=True)
class MilpResult:
    judged: Judged
    objective_ms: float
    """The MILP's own estimate of the time added per iteration."""
    status: str


def coefficients(judge: SimJudge):
    """(units, unit device ms, slots: (name, cost per ms of progress, capacity ms))."""
    sc = judge.scenario
    hw, model, pipeline = sc.hardware, sc.model, sc.pipeline
    if hw.gpu_count != 1:
        raise SpecError("gpus", hw.gpu_count, "1 for the exact MILP")
    cm = AnalyticCostModel()
    units = units_of(pipeline)
    blocks, threads = default_launch(hw)
    rows = model.batch_per_gpu
    unit_ms = np.array([cm.kernel_device_ms(kernel_work(pipeline, "u", u, rows, blocks, threads,
                                                        fixed_offsets=True), hw)
                        for u in units])
    whole = kernel_work(pipeline, "all", pipeline.order, rows, blocks, threads,
                        fixed_offsets=True)
    works = stage_work(model, hw, shard_tables(model, hw), 0)
    slots = []
    for s in stages_for(1):
        e = cm.corun(whole, works[s], hw, True)
        t = cm.stage_ms(works[s], hw)
        slots.append((s.value, e.kernel_factor * (1 - 1 / e.stage_factor),
                      e.stage_factor * t / e.kernel_factor))
    return units, unit_ms, slots


class _Index:
    """Column numbers of the MILP's variables."""

    def __init__(self, nu: int, ns: int) -> None:
        self.nu, self.ns = nu, ns  # slot 0: before the iteration; 1..ns-1: the stages
        self.n = 0
        self.x = {(u, s): self._new() for u in range(nu) for s in range(ns)}
        self.y = {s: self._new() for s in range(ns)}
        self.p = {(s, j): self._new() for s in range(1, ns) for j in range(s, ns)}
        self.d = {s: self._new() for s in range(1, ns)}

    def _new(self) -> int:
        self.n += 1
        return self.n - 1


def solve(judge: SimJudge, time_limit_s: float = 60.0) -> MilpResult:
    units, a, stage_slots = coefficients(judge)
    slots = [(BEFORE_ITERATION, 1.0, 0.0)] + stage_slots
    nu, ns = len(units), len(slots)
    ix = _Index(nu, ns)
    cost = np.zeros(ix.n)
    integral = np.zeros(ix.n)
    for (u, s), col in ix.x.items():
        integral[col] = 1
        if s == 0:
            cost[col] = a[u]
    for s, col in ix.y.items():
        integral[col] = 1
        if s == 0:
            cost[col] = PRE_KERNEL_LAUNCH_MS
    for (_, j), col in ix.p.items():
        cost[col] = slots[j][1]
    for col in ix.d.values():
        cost[col] = 1.0
    rows, lo, hi = [], [], []

    def add(coefs: dict[int, float], low: float, high: float) -> None:
        r = np.zeros(ix.n)
        for c, v in coefs.items():
            r[c] += v
        rows.append(r), lo.append(low), hi.append(high)

    for u in range(nu):  # every unit in exactly one kernel
        add({ix.x[u, s]: 1 for s in range(ns)}, 1, 1)
    for (_, s), col in ix.x.items():  # x[u, s] <= y[s]
        add({col: 1, ix.y[s]: -1}, -np.inf, 0)
    for s in range(1, ns):  # work done in stages + drained = the kernel's time
        coefs = {ix.p[s, j]: 1 for j in range(s, ns)}
        coefs[ix.d[s]] = 1
        coefs.update({ix.x[u, s]: -a[u] for u in range(nu)})
        coefs[ix.y[s]] = -PRE_KERNEL_LAUNCH_MS
        add(coefs, 0, 0)
    for j in range(1, ns):  # a stage's capacity for kernel progress
        add({ix.p[s, j]: 1 for s in range(1, j + 1)}, -np.inf, slots[j][2])
    res = milp(cost, constraints=LinearConstraint(np.array(rows), lo, hi),
               integrality=integral, bounds=Bounds(0, np.where(integral > 0, 1, np.inf)),
               options={"time_limit": time_limit_s})
    if res.x is None:
        raise RuntimeError(f"MILP found no solution: {res.message}")
    sc = judge.scenario
    blocks, threads = default_launch(sc.hardware)
    kernels = []
    for s, (name, _, _) in enumerate(slots):
        members = [u for u in range(nu) if res.x[ix.x[u, s]] > 0.5]
        if members:
            nodes = tuple(n for u in members for n in units[u])
            kernels.append(FusedKernel(f"milp{s}", nodes, name, blocks, threads,
                                       fixed_offsets=True))
    plan = Plan(sc.pipeline.name, sc.model.name, 1, tuple(kernels))
    return MilpResult(judge.judge(plan), float(res.fun), res.message)
