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

The sliced form (EmbeddingUpdate.SLICED_SGD, `sliced_sgd_`) is for tables small enough
that a few slices of one fit in a block's 48 KB of shared memory: each block sums the
updates of one table slice from one chunk of that table's bags in shared memory, then
adds the slice's sums to the table, one global atomic a row and column where the plain
kernel makes one an id and column (heavy-lean's 10k-row tables at batch 16384: 164 ids a
row a step).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from numba import cuda, float32

from backend.launch import TensorLaunch
from spec.model import SLICE_FLOATS

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


@cuda.jit(device=True)
def _add_to_slice(acc, r, n_rows, grad, bag, cols):
    """acc's row r (of n_rows; any other r is not this slice's) += grad[bag], its
    columns rotated by r."""
    if 0 <= r < n_rows:
        for col in range(cols):
            cuda.atomic.add(acc, r * cols + (col + r) % cols, grad[bag, col])


@cuda.jit
def sliced_sgd_kernel(weight, ids, offsets, grad, scale, row_base, slices, chunks):
    """Block (table t, chunk c, slice s) sums grad[bag] over the ids of chunk c's bags of
    table t that fall in slice s of t's rows, in shared memory (a thread a bag, four
    ids in flight), then adds scale x the sums to the slice's rows. Bags are table-major
    (t's bags are [t x B, (t + 1) x B)) and t's ids rows of [row_base[t],
    row_base[t + 1]); an id outside its table's rows is not applied. A row's columns are
    stored rotated by the row, so a warp's threads adding one column of different rows
    spread over the banks."""
    acc = cuda.shared.array(SLICE_FLOATS, float32)
    cols = weight.shape[1]
    tables = row_base.shape[0] - 1
    per_table = grad.shape[0] // tables
    blk = cuda.blockIdx.x
    s = blk % slices
    c = (blk // slices) % chunks
    t = blk // (slices * chunks)
    first, end = row_base[t], row_base[t + 1]
    per_slice = (end - first + slices - 1) // slices
    lo = first + s * per_slice
    n_rows = min(lo + per_slice, end) - lo
    n = n_rows * cols if n_rows > 0 else 0
    tid, step = cuda.threadIdx.x, cuda.blockDim.x
    for e in range(tid, n, step):
        acc[e] = 0.0
    cuda.syncthreads()
    per_chunk = (per_table + chunks - 1) // chunks
    b0 = t * per_table + c * per_chunk
    b1 = min(b0 + per_chunk, (t + 1) * per_table)
    bag = b0 + tid
    while bag < b1 and n > 0:
        j, stop = offsets[bag], min(offsets[bag + 1], ids.shape[0])
        while j + 4 <= stop:  # four loads in flight before their adds
            a, b, c2, d = ids[j] - lo, ids[j + 1] - lo, ids[j + 2] - lo, ids[j + 3] - lo
            _add_to_slice(acc, a, n_rows, grad, bag, cols)
            _add_to_slice(acc, b, n_rows, grad, bag, cols)
            _add_to_slice(acc, c2, n_rows, grad, bag, cols)
            _add_to_slice(acc, d, n_rows, grad, bag, cols)
            j += 4
        while j < stop:
            _add_to_slice(acc, ids[j] - lo, n_rows, grad, bag, cols)
            j += 1
        bag += step
    cuda.syncthreads()
    for e in range(tid, n, step):
        v = acc[e]
        if v != 0.0:
            r = e // cols
            col = (e - r * cols + cols - r % cols) % cols
            cuda.atomic.add(weight, (lo + r, col), v * scale)


_sliced_launch = TensorLaunch(sliced_sgd_kernel)
SLICED_THREADS_PER_BLOCK = 256
SLICED_BLOCKS_PER_SM = 4
"""Blocks of 48 KB an SM (228 KB of shared memory on an H100 or H200): the grid's chunks
of bags are chosen to fill the GPU about once."""


def slice_count(table_rows: list[int], dim: int) -> int:
    """Slices a table is cut into so that each fits a block's SLICE_FLOATS: enough for
    the largest table (smaller tables' slices are smaller)."""
    cap = SLICE_FLOATS // dim
    return max(1, -(-max(table_rows, default=1) // max(cap, 1)))


def sliced_grid(tables: int, slices: int, bags_per_table: int, blocks_target: int
                ) -> tuple[int, int]:
    """(chunks of bags a table's slice is split over, blocks): about `blocks_target`
    blocks, at most one chunk a bag."""
    chunks = max(1, min(bags_per_table, round(blocks_target / max(tables * slices, 1))))
    return chunks, tables * slices * chunks


@functools.cache
def sliced_shape(table_rows: tuple[int, ...], dim: int, bags_per_table: int,
                 device: torch.device) -> tuple[int, int]:
    """(slices, chunks) of the sliced update on `device` for tables of `table_rows` rows:
    the fewest slices that fit, chunks to fill the GPU about once; computed on the host
    once per batch size (no read of the tables' bounds back from the GPU)."""
    slices = slice_count(list(table_rows), dim)
    if -(-max(table_rows) // slices) * dim > SLICE_FLOATS:
        raise ValueError(f"{slices} slices of {max(table_rows)} rows x {dim} do not fit "
                         f"{SLICE_FLOATS} floats of shared memory")
    target = SLICED_BLOCKS_PER_SM * _sm_count(device)
    return slices, sliced_grid(len(table_rows), slices, bags_per_table, target)[0]


@torch.no_grad()
def sliced_sgd_(weight: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor,
                grad: torch.Tensor, lr: float, row_bounds: torch.Tensor, slices: int,
                chunks: int, threads: int = SLICED_THREADS_PER_BLOCK) -> None:
    """In place, as bag_sgd_, for table-major bags: `row_bounds` holds each table's
    first row and then the rows' end ([tables + 1], int64, on the weight's device); the
    grid is tables x `slices` x `chunks` blocks (sliced_shape). On the CPU, index_add_
    as bag_sgd_."""
    tables = row_bounds.numel() - 1
    bags = offsets.numel() - 1
    if grad.shape[0] != bags or grad.shape[1] != weight.shape[1] or tables < 1 \
            or bags % tables:
        raise ValueError(f"grad {tuple(grad.shape)} does not match {bags} bags of dim "
                         f"{weight.shape[1]} over {tables} tables")
    grad = grad.contiguous()
    if weight.device.type != "cuda":
        bag_sgd_index_add_(weight, ids, offsets, grad, lr)
        return
    _sliced_launch(tables * slices * chunks, threads,
                   torch.cuda.current_stream(weight.device).cuda_stream, weight.detach(), ids,
                   offsets, grad, np.float32(-lr), row_bounds, np.int64(slices),
                   np.int64(chunks))
