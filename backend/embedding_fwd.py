"""Sum-pooled embedding bags in one Numba-CUDA kernel: a thread per (bag, column), four
ids in flight at once (the trainer's EmbeddingForward.BAG_KERNEL).

PyTorch's `embedding_bag` forward gives each bag a row of 64 threads over its columns,
so with the heavy models' 8 columns 56 of every 64 threads idle. Here a warp covers
32 / dim bags, its threads reading one id each (the same id for a bag's threads, one
request) and then 32 contiguous bytes of a row per bag. Sums run over each bag's ids in
four interleaved partial sums, added at the end, so the result may differ from
PyTorch's in the last bits (tests compare within float tolerance). Launched at a driver
call's host cost (backend.launch.TensorLaunch). On the CPU, `F.embedding_bag` does the
same.
"""

from __future__ import annotations

import numpy as np
import torch
from corun.backend.embedding_sgd import THREADS_PER_BLOCK, blocks_for
from corun.backend.launch import TensorLaunch
from corun.backend.launch_count import kernel_stand_in
from numba import cuda
from torch.nn import functional as F


@cuda.jit
def bag_sum_kernel(weight, ids, offsets, out):
    """out[bag, c] = sum of weight[ids[j], c] over the bag's ids j, one thread per
    (bag, c), four ids a turn so their loads overlap."""
    cols = weight.shape[1]
    i = cuda.grid(1)
    if i >= out.shape[0] * cols:
        return
    bag = i // cols
    col = i - bag * cols
    j, end = offsets[bag], min(offsets[bag + 1], ids.shape[0])  # corrupt offsets: no further
    s0 = s1 = s2 = s3 = np.float32(0.0)
    while j + 4 <= end:
        a, b, c, d = ids[j], ids[j + 1], ids[j + 2], ids[j + 3]
        s0 += weight[a, col]
        s1 += weight[b, col]
        s2 += weight[c, col]
        s3 += weight[d, col]
        j += 4
    while j < end:
        s0 += weight[ids[j], col]
        j += 1
    out[bag, col] = (s0 + s1) + (s2 + s3)


_launch = TensorLaunch(bag_sum_kernel)


@torch.no_grad()
def bag_sum(weight: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """[bags, dim] sums of `weight`'s rows over each bag's ids; `offsets` has one entry
    per bag plus the last (include_last_offset layout). Written into `out` where given
    (the graphed step's fixed buffer, backend/graphed.py). No autograd graph is kept."""
    bags = offsets.numel() - 1
    if out is not None and tuple(out.shape) != (bags, weight.shape[1]):
        raise ValueError(f"out {tuple(out.shape)} does not match {bags} bags of dim "
                         f"{weight.shape[1]}")
    if weight.device.type != "cuda":
        with kernel_stand_in():
            pooled = F.embedding_bag(ids, weight, offsets, mode="sum",
                                     include_last_offset=True)
            return pooled if out is None else out.copy_(pooled)
    if out is None:
        out = torch.empty(bags, weight.shape[1], device=weight.device, dtype=weight.dtype)
    if bags == 0:
        return out
    _launch(blocks_for(bags, weight.shape[1]), THREADS_PER_BLOCK,
            torch.cuda.current_stream(weight.device).cuda_stream, weight.detach(), ids,
            offsets, out)
    return out
