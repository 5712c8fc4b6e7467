"""Embedding backward and SGD in one pass: each bag's gradient, times -lr, added to the
rows of its ids (the trainer's EmbeddingUpdate.FUSED_SGD).

PyTorch's sparse `embedding_bag` backward first writes every id's bag gradient out
(a gather: 5.0 of the heavy model's 6.2 ms of backward and update at batch 4096 on the
H200) and the update then adds them in (`python bench/embedding_update.py`,
bench/results/embedding_update_h200.json). SGD is linear in the gradient, so the rows
can take the bag gradients directly. On a GPU one Numba-CUDA kernel does it: one thread
per (bag, embedding column) walks its bag's ids and adds atomically (duplicate ids add
up in any order, so the float sums may differ in the last bits from run to run),
launched at a driver call's host cost (backend.launch.TensorLaunch). On the CPU, torch's
`index_add_` of each id's bag gradient does the same.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from numba import cuda

from backend.launch import TensorLaunch

THREADS_PER_BLOCK = 256
UPDATE_BLOCKS_PER_SM = 4
"""The kernel's default grid: 4 blocks an SM, striding over the (bag, column) pairs.
Measured on the H200 (`python bench/update_grid_probe.py`, heavy-fused, run 1 in
bench/results/update_grid_h200.md): one thread per pair (13,312 blocks at batch 16384)
took 5.60 ms, 4 an SM 3.17 ms (8: 3.12, 2: 3.26, 1: 3.46; batch 8192 1.96 -> 1.49 ms),
and the grid, resident at once, leaves room on the SMs: the pipeline's kernel released
beside it cost the step 0.17 ms of its 0.56 alone, against 0.51 beside the full grid."""


@cuda.jit
def bag_sgd_kernel(weight, ids, offsets, grad, scale):
    """weight[ids[j], c] += scale * grad[bag, c] for every j of every bag; a grid
    smaller than one thread per (bag, column) strides over the rest."""
    cols = weight.shape[1]
    n = grad.shape[0] * cols
    i = cuda.grid(1)
    while i < n:
        bag = i // cols
        col = i - bag * cols
        g = grad[bag, col] * scale
        for j in range(offsets[bag], min(offsets[bag + 1], ids.shape[0])):
            cuda.atomic.add(weight, (ids[j], col), g)
        i += cuda.gridsize(1)


_launch = TensorLaunch(bag_sgd_kernel)


def blocks_for(bags: int, cols: int, max_blocks: int = 0) -> int:
    """One thread per (bag, column), or at most `max_blocks` blocks (0: no cap)."""
    full = max(1, -(-bags * cols // THREADS_PER_BLOCK))
    return min(full, max_blocks) if max_blocks > 0 else full


@functools.cache
def _sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


@torch.no_grad()
def bag_sgd_(weight: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor,
             grad: torch.Tensor, lr: float, max_blocks: int | None = None) -> None:
    """In place: weight[ids in bag k] -= lr * grad[k]. `offsets` has one entry per bag
    plus the last (include_last_offset layout), `grad` is [bags, dim]. On a GPU the
    kernel takes at most `max_blocks` blocks (None: UPDATE_BLOCKS_PER_SM an SM; 0: one
    thread per bag and column)."""
    if grad.shape[0] != offsets.numel() - 1 or grad.shape[1] != weight.shape[1]:
        raise ValueError(f"grad {tuple(grad.shape)} does not match {offsets.numel() - 1} "
                         f"bags of dim {weight.shape[1]}")
    grad = grad.contiguous()
    if weight.device.type != "cuda":
        bag_sgd_index_add_(weight, ids, offsets, grad, lr)
        return
    if max_blocks is None:
        max_blocks = UPDATE_BLOCKS_PER_SM * _sm_count(weight.device)
    _launch(blocks_for(grad.shape[0], weight.shape[1], max_blocks), THREADS_PER_BLOCK,
            torch.cuda.current_stream(weight.device).cuda_stream, weight.detach(), ids,
            offsets, grad, np.float32(-lr))


@torch.no_grad()
def bag_sgd_index_add_(weight: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor,
                       grad: torch.Tensor, lr: float) -> None:
    """The same update in torch ops: each id's bag gradient gathered, then `index_add_`
    (the CPU path, and on a GPU the comparison bench/embedding_update.py times)."""
    bag = torch.repeat_interleave(torch.arange(grad.shape[0], device=grad.device),
                                  offsets.diff(), output_size=ids.numel())
    weight.index_add_(0, ids, grad.index_select(0, bag), alpha=-lr)
