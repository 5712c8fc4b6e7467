"""Strategies: how preprocessing is placed, and the kernels each one runs."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from corun.spec import (
    BEFORE_ITERATION,
    FusedKernel,
    Hardware,
    Model,
    Pipeline,
    Plan,
    SpecError,
    stages_for,
)


class StrategyKind(enum.Enum):
    IDEAL = "ideal"
    CPU = "cpu"
    GPU_SEQUENTIAL = "gpu-sequential"
    GPU_OVERLAP = "gpu-overlap"
    PLAN = "plan"


@dataclass(frozen=True)
class Strategy:
    kind: StrategyKind
    cpu_workers: int = 0
    plan: Plan | None = None
    name: str = ""
    """A label for a plan strategy (e.g. which planner made it)."""
    caps_racing_kernels: bool = True
    """A plan strategy's proposer caps the SMs of a kernel that can race the eager step
    (planner.types.Proposer.caps_racing_kernels): where such a plan is left uncapped, the
    simulator says what the cap would do."""
    fixed_offsets: bool = True
    """A baseline's kernel as FusedKernel.fixed_offsets: false to predict a run whose
    kernels found every list's offsets with a scan (its plan file says)."""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind is StrategyKind.CPU:
            return f"cpu:{self.cpu_workers}"
        if self.kind is StrategyKind.PLAN and self.plan is not None:
            return f"plan:{self.plan.pipeline}"
        return self.kind.value


def parse_strategy(text: str, hw: Hardware) -> Strategy:
    """`ideal`, `cpu:N`, `gpu-sequential` or `gpu-overlap` (plans come from files)."""
    if text.startswith("cpu:"):
        n = text[4:]
        if not (n.isascii() and n.isdigit()) or not 1 <= int(n) <= hw.host_cpu_cores:
            raise SpecError("strategy", text, f"cpu:N with N an integer in [1, "
                            f"{hw.host_cpu_cores}] (the host's cores; raise --host-cores)")
        return Strategy(StrategyKind.CPU, cpu_workers=int(n))
    allowed = ("ideal", "gpu-sequential", "gpu-overlap")
    if text not in allowed:
        raise SpecError("strategy", text,
                        f"one of {', '.join(allowed)}, cpu:N, all, or --plan FILE")
    return Strategy(StrategyKind(text))


def host_workers_per_gpu(strategy: Strategy | None, hw: Hardware) -> int:
    """Host worker processes one GPU's process starts: its share of `cpu:N`'s workers or
    of the host's cores. The simulator runs the machine's workers as one pool feeding
    every GPU; the executor runs one pool per rank, so each rank gets 1/gpu_count."""
    total = strategy.cpu_workers if strategy is not None and \
        strategy.kind is StrategyKind.CPU else hw.host_cpu_cores
    return max(1, total // hw.gpu_count)


def default_launch(hw: Hardware) -> tuple[int, int]:
    """One full wave of 256-thread blocks: (blocks, threads per block)."""
    per_sm = hw.gpu.max_threads_per_sm // 256
    return hw.gpu.sm_count * per_sm, 256


def strategy_plan(strategy: Strategy, pipeline: Pipeline, model_name: str,
                  hw: Hardware, model: Model | None = None) -> Plan:
    """The Plan a strategy amounts to. Baselines fuse the whole pipeline into one kernel
    (fusion is not optional: ../shared/GPU.md measured 27 launches at 2.9 ms). A given
    plan is checked against the pipeline, and against `model` where given."""
    n = hw.gpu_count
    blocks, threads = default_launch(hw)
    if strategy.kind is StrategyKind.PLAN:
        if strategy.plan is None:
            raise SpecError("strategy.plan", None, "a Plan for strategy 'plan'")
        plan = strategy.plan
        if plan.gpu_count != n:
            raise SpecError("plan.gpu_count", plan.gpu_count,
                            f"the hardware's GPU count ({n})")
        plan.check_pipeline(pipeline)
        if model is not None:
            plan.check_model(model, hw.gpu.sm_count, hw.gpu.max_blocks_per_sm)
        return plan
    if strategy.kind is StrategyKind.IDEAL:
        return Plan(pipeline.name, model_name, n, ())
    if strategy.kind is StrategyKind.CPU:
        return Plan(pipeline.name, model_name, n, (), cpu_nodes=tuple(pipeline.order))
    if strategy.kind is StrategyKind.GPU_SEQUENTIAL:
        k = FusedKernel("all", tuple(pipeline.order), BEFORE_ITERATION, blocks, threads,
                        fixed_offsets=strategy.fixed_offsets)
        return Plan(pipeline.name, model_name, n, (k,))
    first = stages_for(n)[0]
    k = FusedKernel("all", tuple(pipeline.order), first.value, blocks, threads,
                    fixed_offsets=strategy.fixed_offsets)
    return Plan(pipeline.name, model_name, n, (k,), training_priority_high=False)


__all__ = ["Strategy", "StrategyKind", "default_launch", "parse_strategy", "strategy_plan"]
