"""The host thread that drives one GPU: it launches every training kernel and every fused
preprocessing kernel, and stages, assembles and checks each batch, one thing at a time.

On the H200 this thread, not the GPU, set the pace of most executed runs (bench/results/
execute_h200.md: iteration time = the sum of the host's pieces): a GPU that finishes its
work early waits for the next launch. The simulator runs the thread beside each GPU, so
an iteration takes at least its host time.

Constants, from `corun execute`'s own host breakdown on the H200 machine (16-core host,
torch 2.11, numba-cuda 0.30.4; bench/results/raw/execute_*_run{2,3}.json, commands in
bench/results/execute_h200.md; run 5 and wide-2x/wide-4x were not used to fit them):
  step_ms           4.90  `ideal` host step, kaggle/terabyte b4096/b8192: 4.52-5.13 ms
                          (bench/host_split.py, the step behind a spin: 5.1-6.0 ms);
  kernel_launch_ms  0.29  per host launch of a fused kernel (a list-writing kernel is
                          three: lengths, scan, values): least squares through zero on
                          the host-bound kaggle/terabyte b8192 runs (run 3): 3 launches
                          of gpu-sequential/overlap add 0.23-0.53 ms to the step, RAP's
                          11 add 3.32-3.56 ms;
  batch_fixed_ms    1.31  staging + assembly + check of one batch: a line through its
  batch_ms_per_mb   0.080 output MB, least squares over the 22 non-ideal GPU runs of
                          runs 2-3 (kaggle/terabyte 1.9-3.9 MB: 1.1-1.9 ms; multihot
                          16 MB: 2.0-2.4 ms; heavy 86 MB of long lists: 7.9-8.6 ms).
The same host is assumed for every GPU kind (a what-if elsewhere keeps this host). The
batch terms were measured while the executor copied every batch back to check 64 rows
on the host; it now compares every row on the GPU and reads one flag back, which should
shrink them (heavy's 86 MB copy above all): not yet re-measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from spec import FusedKernel, Pipeline
from spec.pipeline import Shape


@dataclass(frozen=True)
class HostCosts:
    """What one GPU's host thread spends per iteration, by piece."""

    step_ms: float = 4.90
    kernel_launch_ms: float = 0.29
    batch_fixed_ms: float = 1.31
    batch_ms_per_mb: float = 0.080
    source: str = "corun execute host breakdown, H200 machine (costmodel/host.py)"

    def iteration_ms(self, kernel_launches: int, output_mb: float, batches: bool) -> float:
        """Host time of one iteration: the step, its fused-kernel launches and, when
        the executor stages real batches (`batches`; not `ideal`'s replay), their
        staging, assembly and check."""
        batch = self.batch_fixed_ms + self.batch_ms_per_mb * output_mb if batches else 0.0
        return self.step_ms + self.kernel_launch_ms * kernel_launches + batch


H200_HOST = HostCosts()


def output_mb(pipeline: Pipeline, rows: int) -> float:
    """MB of one batch's pipeline outputs (what the host assembles and checks), lists at
    their mean length."""
    cols = pipeline.columns
    names = list(pipeline.dense_outputs) + [s.node for s in pipeline.sparse_outputs]
    return sum(cols[n].bytes_per_row() for n in names) * rows / 1e6


def kernel_launches(kernels: Iterable[FusedKernel], pipeline: Pipeline) -> int:
    """Host launches of fused kernels per batch: a kernel that writes a list column adds
    a lengths kernel and a scan (backend/runner.py)."""
    cols = pipeline.columns
    return sum(3 if any(cols[x].shape is Shape.LIST for x in pipeline.sinks(k.nodes)) else 1
               for k in kernels)
