"""How long training stages and preprocessing kernels take, alone and together."""

from costmodel.analytic import AnalyticCostModel
from costmodel.sharding import Sharding, shard_tables
from costmodel.types import Comm, CoRunEffect, CostModel, KernelWork, StageWork
from costmodel.workload import kernel_work, stage_work

__all__ = ["AnalyticCostModel", "Comm", "CoRunEffect", "CostModel", "KernelWork", "Sharding",
           "StageWork", "kernel_work", "shard_tables", "stage_work"]
