"""RAP's published schedule heuristic (ASPLOS 2024), re-implemented as a baseline.

1. Fusion: op nodes of the same op type in the same dependency layer (depth from the raw
   input) form one horizontally fused kernel.
2. Stages are ranked by spare capacity over latency: capacity = stage time x (1 - its
   busiest resource's share), from the analytic model (RAP uses fixed per-stage
   capacities of this kind); collectives count as fully spare.
3. Kernels, layer by layer, are placed into stages in rank order, never before a stage
   holding a kernel they depend on; a kernel that does not fit the stage's remaining
   capacity is split by node count, the rest going to the next stage in rank order.
"""

from __future__ import annotations

from corun.costmodel import AnalyticCostModel, kernel_work, shard_tables, stage_work
from corun.planner.judge import SimJudge
from corun.planner.types import Judge, Judged, Proposer
from corun.sim.strategy import default_launch
from corun.spec import FusedKernel, Pipeline, Plan, stages_for


def layers(pipeline: Pipeline) -> dict[str, int]:
    depth: dict[str, int] = {}
    for name in pipeline.order:
        src = pipeline.node_by_name[name].input
        depth[name] = depth[src] + 1 if src in depth else 0
    return depth


class RapProposer(Proposer):
    name = "rap"
    caps_racing_kernels = False

    def propose(self, judge: Judge, time_limit_s: float) -> Judged:
        assert isinstance(judge, SimJudge)
        sc = judge.scenario
        hw, model, pipeline = sc.hardware, sc.model, sc.pipeline
        cm = AnalyticCostModel()
        works = stage_work(model, hw, shard_tables(model, hw), 0)
        stages = stages_for(hw.gpu_count)
        blocks, threads = default_launch(hw)
        spare, latency = {}, {}
        for s in stages:
            w = works[s]
            t = max(cm.stage_ms(w, hw), 1e-6)
            busy = 0.0 if w.comm.value != "none" else max(cm.stage_demand(w, hw))
            spare[s], latency[s] = t * (1 - busy), t
        ranked = sorted(stages, key=lambda s: (-spare[s] / latency[s], stages.index(s)))
        depth = layers(pipeline)
        groups: dict[tuple[int, str], list[str]] = {}
        for name in pipeline.order:
            groups.setdefault((depth[name], pipeline.node_by_name[name].op.value), []).append(name)
        left = dict(spare)
        placed: dict[str, int] = {}  # node -> stage position
        kernels: list[FusedKernel] = []
        for (layer, op), nodes in sorted(groups.items()):
            kw = kernel_work(pipeline, op, nodes, model.batch_per_gpu, blocks, threads,
                             fixed_offsets=True)
            per_node = cm.kernel_ms(kw, hw) / len(nodes)
            todo = list(nodes)
            while todo:
                floor = max((placed[pipeline.node_by_name[n].input] for n in todo
                             if pipeline.node_by_name[n].input in placed), default=0)
                options = [s for s in ranked if stages.index(s) >= floor]
                target = next((s for s in options if left[s] > 0), options[-1])
                fit = len(todo) if left[target] <= 0 and target == options[-1] else \
                    max(1, min(len(todo), int(left[target] / per_node)))
                part, todo = todo[:fit], todo[fit:]
                left[target] -= per_node * len(part)
                for n in part:
                    placed[n] = stages.index(target)
                kernels.append(FusedKernel(f"{op}{layer}_{len(kernels)}", tuple(part),
                                           target.value, blocks, threads, fixed_offsets=True))
        order = {s.value: i for i, s in enumerate(stages)}
        kernels.sort(key=lambda k: order[k.stage])  # stable: layer order within a stage
        plan = Plan(pipeline.name, model.name, hw.gpu_count, tuple(kernels))
        return judge.judge(plan)
