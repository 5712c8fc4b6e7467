"""How long training stages and preprocessing kernels take, alone and together."""

from costmodel.analytic import AnalyticCostModel
from costmodel.types import Comm, CoRunEffect, CostModel, KernelWork, StageWork
from costmodel.workload import kernel_work, stage_work
from spec.sharding import Sharding, shard_tables

__all__ = ["AnalyticCostModel", "Comm", "CoRunEffect", "CostModel", "KernelWork", "Sharding",
           "StageWork", "kernel_work", "shard_tables", "stage_work"]
