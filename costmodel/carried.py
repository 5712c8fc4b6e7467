"""A cost model fitted on one GPU kind, answering for another: every time is the fitted
kind's, carried to the other by the two kinds' ceilings.

A time on the fitted kind splits into roofline parts: what its bytes need at the copy
ceiling, what its FLOPs need at the precision's peak, and the rest (launch gaps, latency,
issue), each at most what is left of the time. Each part scales by the other kind's
ceiling for it: copy bandwidth, peak FLOP/s, and SMs x clock. So a stage that its bytes
do not bound keeps its time between kinds with the same SMs and clock (an H200 and an
H100), and a kind no faster in any ceiling is never predicted faster.

The learned features are normalised by the ceilings too, but a fit on one kind sees
bytes, FLOPs and batch grow together and cannot tell which of them sets a stage's time;
carrying the fitted kind's answer keeps every timed stage and kernel it measured.
Co-run factors, release steps and stage rooms are ratios and carry unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from corun.costmodel.stage_room import RoomKind, StageRoom
from corun.costmodel.types import CoRunEffect, CostModel, KernelWork, StageWork, WholeRun
from corun.spec import GpuKind, Hardware, Model, Precision
from corun.spec.findings import Finding, FindingKind, finding


@dataclass(frozen=True)
class RooflineParts:
    """A time split by what bounds each part of it (ms)."""

    memory_ms: float
    math_ms: float
    rest_ms: float


def split_ms(ms: float, gpu: GpuKind, hbm_bytes: float, flops: float = 0.0,
             precision: Precision | None = None) -> RooflineParts:
    """`ms` on `gpu` as its bytes at the copy ceiling, then its FLOPs at the precision's
    peak, then the rest: each part at most what the parts before it left."""
    memory = min(ms, max(hbm_bytes, 0.0) / gpu.copy_bytes_per_s * 1e3)
    math = 0.0
    if flops > 0 and precision is not None:
        math = min(ms - memory, flops / gpu.peak_flops_per_s(precision) * 1e3)
    return RooflineParts(memory, math, ms - memory - math)


def carry_ms(ms: float, source: GpuKind, target: GpuKind, hbm_bytes: float,
             flops: float = 0.0, precision: Precision | None = None) -> float:
    """`ms` measured or predicted on `source`, as `target` would take it."""
    p = split_ms(ms, source, hbm_bytes, flops, precision)
    math = 0.0
    if p.math_ms > 0:
        math = p.math_ms * (source.peak_flops_per_s(precision)
                            / target.peak_flops_per_s(precision))
    return (p.memory_ms * source.copy_bytes_per_s / target.copy_bytes_per_s + math
            + p.rest_ms * source.int32_ops_per_s / target.int32_ops_per_s)


def carry_stage_ms(ms: float, work: StageWork, source: GpuKind, target: GpuKind) -> float:
    return carry_ms(ms, source, target, work.hbm_bytes, work.flops, work.precision)


def carry_kernel_ms(ms: float, work: KernelWork, source: GpuKind, target: GpuKind) -> float:
    """A fused kernel's integer work issues at SMs x clock, as the rest does."""
    return carry_ms(ms, source, target, work.hbm_bytes)


class CarriedCostModel(CostModel):
    """`inner`, fitted on `source`, asked about the same work on `source` and its times
    carried to the GPU asked about (carry_ms); its findings are `source`'s, with a
    TIMES_CARRIED finding beside them."""

    def __init__(self, inner: CostModel, source: GpuKind) -> None:
        self.inner, self.source = inner, source
        self.name = f"{inner.name}, carried from {source.name} by ceilings"

    def _on_source(self, hw: Hardware) -> Hardware:
        return replace(hw, gpu=self.source)

    def stage_ms(self, work: StageWork, hw: Hardware) -> float:
        return carry_stage_ms(self.inner.stage_ms(work, self._on_source(hw)), work,
                              self.source, hw.gpu)

    def kernel_ms(self, work: KernelWork, hw: Hardware) -> float:
        return carry_kernel_ms(self.inner.kernel_ms(work, self._on_source(hw)), work,
                               self.source, hw.gpu)

    def corun(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
              training_priority_high: bool) -> CoRunEffect:
        return self.inner.corun(kernel, stage, self._on_source(hw), training_priority_high)

    def whole_run(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
                  resident: bool = False) -> WholeRun | None:
        return self.whole_runs(kernel, [stage], hw, resident)[0]

    def whole_runs(self, kernel: KernelWork, stages: Sequence[StageWork], hw: Hardware,
                   resident: bool = False) -> list[WholeRun | None]:
        """Each run's kernel and stage alone carried, and their co-run times scaled as
        those were: the slowdowns stay the fitted kind's."""
        runs = self.inner.whole_runs(kernel, stages, self._on_source(hw), resident)
        out: list[WholeRun | None] = []
        for stage, run in zip(stages, runs):
            if run is None:
                out.append(None)
                continue
            k_alone, k_corun, s_alone, s_corun = run
            k = carry_kernel_ms(k_alone, kernel, self.source, hw.gpu)
            s = carry_stage_ms(s_alone, stage, self.source, hw.gpu)
            out.append((k, k_corun * k / k_alone if k_alone > 0 else k_corun,
                        s, s_corun * s / s_alone if s_alone > 0 else s_corun))
        return out

    def release_rates(self, kernel: KernelWork, works: Sequence[StageWork], hw: Hardware,
                      release: int) -> list[tuple[float, float]] | None:
        return self.inner.release_rates(kernel, works, self._on_source(hw), release)

    def stage_room(self, model: str, batch: int, stage: str, graphed: bool, hw: Hardware,
                   kind: RoomKind) -> StageRoom | None:
        return self.inner.stage_room(model, batch, stage, graphed, self._on_source(hw), kind)

    def cpu_batch_ms(self, kernel: KernelWork) -> float:
        return self.inner.cpu_batch_ms(kernel)

    def untimed_kernels(self, kernels: Sequence[KernelWork], hw: Hardware) -> Finding | None:
        return self.inner.untimed_kernels(kernels, self._on_source(hw))

    def untimed_stages(self, model: Model, stages: Sequence[StageWork],
                       hw: Hardware) -> Finding | None:
        return self.inner.untimed_stages(model, stages, self._on_source(hw))

    def carried(self, hw: Hardware) -> Finding | None:
        return finding(FindingKind.TIMES_CARRIED, gpu=hw.gpu.name, source=self.source.name,
                       copy_tb_s=hw.gpu.copy_bytes_per_s / 1e12,
                       source_copy_tb_s=self.source.copy_bytes_per_s / 1e12,
                       profiled=float(bool(hw.machine)))
