"""Plan variants for controlled comparisons (one decision changed, the rest kept)."""

from __future__ import annotations

from dataclasses import replace

from corun.planner.search import LocalSearch
from corun.planner.units import units_of
from corun.sim import Scenario
from corun.spec import FusedKernel, Mapping, Plan
from corun.spec.sharding import shard_tables


def with_owner_mapping(plan: Plan, scenario: Scenario) -> Plan:
    """The same plan with every feature that forms a chain of its own preprocessed by its
    table's owner over the global batch (the table-owner mapping), in a kernel per owner
    released at the stage its kernel had; everything else unchanged. The owners are
    written into the plan, so whoever runs it shards the tables the same way."""
    units = units_of(scenario.pipeline)
    owner_of = LocalSearch._owners(scenario, units)
    mapping = dict(plan.feature_mapping)
    kernels: list[FusedKernel] = []
    for k in plan.kernels:
        inside = set(k.nodes)
        moved = [u for u in owner_of if k.gpu is None and set(units[u]) <= inside]
        moved_nodes = {n for u in moved for n in units[u]}
        rest = tuple(n for n in k.nodes if n not in moved_nodes)
        if rest:
            kernels.append(replace(k, nodes=rest))
        by_gpu: dict[int, list[str]] = {}
        for u in moved:
            by_gpu.setdefault(owner_of[u], []).extend(units[u])
            mapping[units[u][-1]] = Mapping.OWNER
        for g, nodes in sorted(by_gpu.items()):
            kernels.append(FusedKernel(f"{k.name}-owner{g}", tuple(nodes), k.stage, k.blocks,
                                       k.threads_per_block, gpu=g, warp_rows=k.warp_rows,
                                       fixed_offsets=k.fixed_offsets,
                                       source_first=k.source_first))
    owners = dict(shard_tables(scenario.model, scenario.hardware,
                               plan.table_owner or None).owner)
    return replace(plan, kernels=tuple(kernels), feature_mapping=mapping, table_owner=owners)
