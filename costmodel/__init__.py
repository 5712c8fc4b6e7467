"""How long training stages and preprocessing kernels take, alone and together."""

from corun.costmodel.analytic import AnalyticCostModel
from corun.costmodel.types import Comm, CoRunEffect, CostModel, KernelWork, StageWork
from corun.costmodel.workload import kernel_work, stage_work
from corun.spec.sharding import Sharding, shard_tables

__all__ = ["AnalyticCostModel", "Comm", "CoRunEffect", "CostModel", "KernelWork", "Sharding",
           "StageWork", "kernel_work", "shard_tables", "stage_work"]
