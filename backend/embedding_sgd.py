"""Embedding backward and SGD in one pass: each bag's gradient, times -lr, added to the
rows of its ids (the trainer's EmbeddingUpdate.FUSED_SGD).

PyTorch's sparse `embedding_bag` backward first writes every id's bag gradient out
(a gather: 5.0 of the heavy model's 6.2 ms of backward and update at batch 4096 on the
H200) and the update then adds them in. SGD is linear in the gradient, so the rows
can take the bag gradients directly. On a GPU one Numba-CUDA kernel does it: one thread
per (bag, embedding column) walks its bag's ids and adds atomically (duplicate ids add
up in any order, so the float sums may differ in the last bits from run to run),
launched at a driver call's host cost (backend.launch.TensorLaunch). On the CPU, torch's
`index_add_` of each id's bag gradient does the same.

With skewed ids the atomics on one row serialize: heavy-lean's b16384 update took 2.34 ms
with zipf-1.1 raw ids, whose most frequent row holds 18% of a table's ids, and 0.77 ms
with uniform ones.
The hot-row form (EmbeddingUpdate.FUSED_SGD_HOT_ROW) first samples each table's most
frequent row (`hot_rows_kernel`), then counts a bag's ids on that row in a register and
adds the bag's gradient times the count once.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from corun.backend.launch import TensorLaunch
from corun.backend.launch_count import kernel_stand_in
from corun.spec.plan import TRAINER_UPDATE_BLOCKS_PER_SM
from numba import cuda, int64

THREADS_PER_BLOCK = 256
UPDATE_BLOCKS_PER_SM = TRAINER_UPDATE_BLOCKS_PER_SM
"""The kernel's default grid: 4 blocks an SM, striding over the (bag, column) pairs.
Measured on the H200 (heavy-fused): one thread per pair (13,312 blocks at batch 16384)
took 5.60 ms, 4 an SM 3.17 ms (8: 3.12, 2: 3.26, 1: 3.46; batch 8192 1.96 -> 1.49 ms),
and the grid, resident at once, leaves room on the SMs: the pipeline's kernel released
beside it cost the step 0.17 ms of its 0.56 alone, against 0.51 beside the full grid."""


@cuda.jit
def bag_sgd_kernel(weight, ids, offsets, grad, scale, hot, per_table):
    """weight[ids[j], c] += scale * grad[bag, c] for every j of every bag; a grid
    smaller than one thread per (bag, column) strides over the rest. Bags are
    table-major, `per_table` a table; ids equal to their table's `hot[t]` (-1: none) are
    counted and added once a bag."""
    cols = weight.shape[1]
    n = grad.shape[0] * cols
    i = cuda.grid(1)
    while i < n:
        bag = i // cols
        col = i - bag * cols
        g = grad[bag, col] * scale
        h = hot[bag // per_table]
        count = 0
        for j in range(offsets[bag], min(offsets[bag + 1], ids.shape[0])):
            r = ids[j]
            if r == h:
                count += 1
            else:
                cuda.atomic.add(weight, (r, col), g)
        if count > 0:
            cuda.atomic.add(weight, (h, col), g * count)
        i += cuda.gridsize(1)


HOT_SAMPLES = 256
"""Ids a table's hot row is chosen from (one block of this many threads a table). With
the synthetic zipf-1.1 ids the hottest row holds 18% of a table's ids and the next 3.7%
(heavy-small's b4096 batch from backend.data.synthetic_inputs): about 46 samples against 9, so
the pick is that row all but always; the sampling and the compare cost up to 0.1 ms a step where
no row is hot (b8192, uniform ids)."""


@cuda.jit
def hot_rows_kernel(ids, offsets, per_table, hot):
    """hot[t] = the most frequent of HOT_SAMPLES ids sampled evenly over table t's bags
    (each sampled bag's middle id; -1 where every sampled bag is empty)."""
    seen = cuda.shared.array(HOT_SAMPLES, int64)
    counts = cuda.shared.array(HOT_SAMPLES, int64)
    t, k = cuda.blockIdx.x, cuda.threadIdx.x
    bag = t * per_table + (k * per_table) // HOT_SAMPLES
    start, stop = offsets[bag], min(offsets[bag + 1], ids.shape[0])
    seen[k] = ids[(start + stop - 1) // 2] if stop > start else -1
    cuda.syncthreads()
    c = 0
    if seen[k] >= 0:
        for m in range(HOT_SAMPLES):
            if seen[m] == seen[k]:
                c += 1
    counts[k] = c
    cuda.syncthreads()
    if k == 0:
        best = 0
        for m in range(1, HOT_SAMPLES):
            if counts[m] > counts[best]:
                best = m
        hot[t] = seen[best]


_launch = TensorLaunch(bag_sgd_kernel)
_hot_launch = TensorLaunch(hot_rows_kernel)


def blocks_for(bags: int, cols: int, max_blocks: int = 0) -> int:
    """One thread per (bag, column), or at most `max_blocks` blocks (0: no cap)."""
    full = max(1, -(-bags * cols // THREADS_PER_BLOCK))
    return min(full, max_blocks) if max_blocks > 0 else full


@functools.cache
def _sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.cache
def _hot_buffer(device: torch.device, tables: int) -> torch.Tensor:
    """Each table's hot row, made once: [-1] (none) without tables, else filled by
    hot_rows_kernel on the update's stream before each update reads it."""
    return torch.full((max(tables, 1),), -1, dtype=torch.int64, device=device)


@torch.no_grad()
def bag_sgd_(weight: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor,
             grad: torch.Tensor, lr: float, max_blocks: int | None = None,
             hot_tables: int = 0) -> None:
    """In place: weight[ids in bag k] -= lr * grad[k]. `offsets` has one entry per bag
    plus the last (include_last_offset layout), `grad` is [bags, dim]. On a GPU the
    kernel takes at most `max_blocks` blocks (None: UPDATE_BLOCKS_PER_SM an SM; 0: one
    thread per bag and column); with `hot_tables` (the bags table-major over that many
    tables) each table's sampled hot row is counted per bag (EmbeddingUpdate.
    FUSED_SGD_HOT_ROW)."""
    bags = offsets.numel() - 1
    if grad.shape[0] != bags or grad.shape[1] != weight.shape[1] \
            or (hot_tables and (bags < hot_tables or bags % hot_tables)):
        raise ValueError(f"grad {tuple(grad.shape)} does not match {bags} bags of dim "
                         f"{weight.shape[1]}" + (f" over {hot_tables} tables" if hot_tables
                                                 else ""))
    grad = grad.contiguous()
    if weight.device.type != "cuda":
        with kernel_stand_in(2 if hot_tables else 1):
            bag_sgd_index_add_(weight, ids, offsets, grad, lr)
        return
    if max_blocks is None:
        max_blocks = UPDATE_BLOCKS_PER_SM * _sm_count(weight.device)
    stream = torch.cuda.current_stream(weight.device).cuda_stream
    tables = max(hot_tables, 1)
    hot = _hot_buffer(weight.device, hot_tables)
    if hot_tables:
        _hot_launch(hot_tables, HOT_SAMPLES, stream, ids, offsets,
                    np.int64(bags // hot_tables), hot)
    _launch(blocks_for(bags, weight.shape[1], max_blocks), THREADS_PER_BLOCK, stream,
            weight.detach(), ids, offsets, grad, np.float32(-lr), hot,
            np.int64(max(bags // tables, 1)))


@torch.no_grad()
def bag_sgd_index_add_(weight: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor,
                       grad: torch.Tensor, lr: float) -> None:
    """The same update in torch ops: each id's bag gradient gathered, then `index_add_`
    (the CPU path, and on a GPU the baseline the fused kernel is compared with)."""
    bag = torch.repeat_interleave(torch.arange(grad.shape[0], device=grad.device),
                                  offsets.diff(), output_size=ids.numel())
    weight.index_add_(0, ids, grad.index_select(0, bag), alpha=-lr)
