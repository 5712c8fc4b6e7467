"""The analytic cost model: rooflines with a few stated efficiencies.

It is the baseline every learned model must beat on held-out data. Its constants are
estimates, each with its reason; where ../shared/GPU.md reports a measurement on the
H200, the constant was chosen to agree with it, and says so.
"""

from __future__ import annotations

from corun.costmodel.types import CoRunEffect, CostModel, KernelWork, StageWork
from corun.spec import Hardware

GEMM_EFFICIENCY = 0.75
"""Share of the precision's dense peak a large fp32/tf32/bf16 GEMM reaches: the bf16
GEMM measured here reached 0.80 of datasheet (KINDS.md); fp32 SIMT GEMMs reach less."""
MEMORY_EFFICIENCY = 0.6
"""Share of the copy ceiling the training stages' memory traffic reaches (embedding
gathers of 512-byte rows, elementwise ops): an estimate."""
STAGE_KERNEL_LAUNCH_MS = 0.006
"""Device-side gap per kernel of a training stage: ~5-7 us back-to-back launch latency
on Hopper (a common microbenchmark figure), an estimate."""
PRE_KERNEL_LAUNCH_MS = 0.25
"""Host time to launch one fused group (lengths kernel, offsets scan, values kernel):
measured on the H200, a fused kaggle group at 65,536 rows takes 0.26-0.29 ms of wall time
for 0.07 ms of device time, and 0.23-0.32 ms to enqueue."""
PRE_BANDWIDTH_EFFICIENCY = 0.25
"""Share of the copy ceiling our fused preprocessing groups reach at 4M rows on the H200,
offsets included: kaggle 25%, terabyte 25%, wide-2x/4x 21% (bench/ops_gpu.py; multihot's
long lists reach 13%, which this constant does not capture)."""
OCCUPANCY_TO_SATURATE = 0.5
"""Occupancy a memory-bound kernel needs to reach its bandwidth: an estimate (Little's
law with ~600 ns HBM latency and 8-byte loads on Hopper)."""
THREADS_TO_FILL_SM = 1024
"""Resident threads per SM a training kernel needs to count as filling that SM."""
PRIORITY_STAGE_SHARE = 0.97
"""Share of contended resources a high-priority training stream keeps: chosen so a 0.7 ms
kernel beside a 6.8 ms step adds ~0.3%, as ../shared/GPU.md measured on the H200."""
EQUAL_STAGE_SHARE = 0.75
"""The same with equal priorities: chosen so that case adds ~3.5% (../shared/GPU.md)."""
MAX_KERNEL_SLOWDOWN = 20.0
CPU_NS_PER_OP = 1.81
"""Host ns per estimated instruction (OPS_PER_ELEMENT), one core of the Numba CPU
pipeline that cpu:N workers run: on the H200 machine's 16 cores the kaggle pipeline took
1,023 ms for 4,194,304 rows, 16 core-seconds over
2,157 estimated instructions per row."""
CPU_NODE_OVERHEAD_MS = 0.01
"""Per op node per batch dispatch overhead in a host worker: an estimate."""


def _occupancy(threads: float, hw: Hardware) -> float:
    return min(1.0, threads / hw.gpu.max_resident_threads)


def kernel_occupancy(work: KernelWork, hw: Hardware) -> float:
    return hw.gpu.occupancy(work.blocks, work.threads_per_block, work.registers_per_thread)


class AnalyticCostModel(CostModel):
    """Roofline times; co-running shares bandwidth and SM slots by priority."""

    name = "analytic"

    def stage_ms(self, work: StageWork, hw: Hardware) -> float:
        g = hw.gpu
        compute = work.flops / (g.peak_flops_per_s(work.precision) * GEMM_EFFICIENCY)
        fill = min(1.0, work.parallelism / (g.sm_count * THREADS_TO_FILL_SM)) or 1.0
        memory = work.hbm_bytes / (g.copy_bytes_per_s * MEMORY_EFFICIENCY)
        return max(compute / fill, memory) * 1e3 + work.kernels * STAGE_KERNEL_LAUNCH_MS

    def kernel_device_ms(self, work: KernelWork, hw: Hardware) -> float:
        g = hw.gpu
        occ = kernel_occupancy(work, hw)
        bw = g.copy_bytes_per_s * PRE_BANDWIDTH_EFFICIENCY * min(1.0, occ / OCCUPANCY_TO_SATURATE)
        compute = work.int_ops / (g.int32_ops_per_s * min(1.0, occ / OCCUPANCY_TO_SATURATE))
        return max(work.hbm_bytes / bw, compute) * 1e3

    def kernel_ms(self, work: KernelWork, hw: Hardware) -> float:
        return PRE_KERNEL_LAUNCH_MS + self.kernel_device_ms(work, hw)

    def stage_demand(self, work: StageWork, hw: Hardware) -> tuple[float, float]:
        """(share of bandwidth, share of SM slots) the stage uses alone."""
        t = self.stage_ms(work, hw) * 1e-3
        bw = min(1.0, work.hbm_bytes / (t * hw.gpu.copy_bytes_per_s)) if t > 0 else 0.0
        return bw, _occupancy(work.parallelism, hw)

    def corun(self, kernel: KernelWork, stage: StageWork, hw: Hardware,
              training_priority_high: bool) -> CoRunEffect:
        bw_s, sm_s = self.stage_demand(stage, hw)
        t_k = self.kernel_device_ms(kernel, hw) * 1e-3
        bw_k = min(1.0, kernel.hbm_bytes / (t_k * hw.gpu.copy_bytes_per_s)) if t_k > 0 else 0.0
        sm_k = kernel_occupancy(kernel, hw)
        share = PRIORITY_STAGE_SHARE if training_priority_high else EQUAL_STAGE_SHARE
        f_s = f_k = 1.0
        for need_s, need_k in ((bw_s, bw_k), (sm_s, sm_k)):
            if need_s + need_k <= 1.0 or need_s == 0 or need_k == 0:
                continue
            got_s = min(need_s, max(share, 1.0 - need_k))
            got_k = max(1.0 - got_s, 1.0 / MAX_KERNEL_SLOWDOWN * need_k)
            f_s = max(f_s, need_s / got_s)
            f_k = max(f_k, need_k / got_k)
        return CoRunEffect(stage_factor=f_s, kernel_factor=min(f_k, MAX_KERNEL_SLOWDOWN))

    def cpu_batch_ms(self, kernel: KernelWork) -> float:
        return kernel.int_ops * CPU_NS_PER_OP * 1e-6 + kernel.node_count * CPU_NODE_OVERHEAD_MS
