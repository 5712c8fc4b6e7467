"""The trainer's Batch built from the pools by one CUDA kernel, checked in the same pass.

`backend.assembly.Assembler` builds a Batch with about fifteen PyTorch operations and
`differs` checks it with fifteen more; each costs the host thread that also launches the
training step some 25 us (on the H200, 1.0-1.6 ms of "finish" per iteration). Here one kernel
writes dense features, ids and offsets into buffers kept per pool set and compares every value
with the reference on the way (same rule: integers exactly, floats within 1 ulp, NaN equal to
NaN); the host reads the id counts and the mismatch flag in one copy, then only slices: 0.07-0.25
ms of host against 0.64-1.67 ms, the same batches built. The PyTorch path stays
for the CPU and as this kernel's reference in the tests (run in the CUDA simulator).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from corun.backend import driver
from corun.backend.assembly import OutputMap
from corun.backend.check import MismatchError
from corun.backend.launch import BoundLaunch, stream_address
from corun.backend.settings import ASSEMBLY_IDS_PER_THREAD
from corun.backend.trainer import Batch
from numba import cuda
from numba.extending import register_jitable

THREADS = 256
SIGN_OFF = 0x7FFFFFFF
INF_BITS = 0x7F800000


@register_jitable
def table_count(t, offs, offsets_base, rows):
    """Ids of table t in this batch: the last of its offsets, or one per row."""
    ob = offsets_base[t]
    return rows if ob < 0 else offs[ob + rows]


@register_jitable
def assemble_ids(t, x, start, stride, i64, offs, values_base, offsets_base, capacity,
                 row_base, rows, ids, status, check, ref_ids):
    """Table t's ids x, x + stride, ... (the table's ids begin at `start`): the pool holds
    them contiguously already, so a warp copies 32 neighbours (coalesced, whatever the
    list lengths)."""
    count = table_count(t, offs, offsets_base, rows)
    if count < 0 or count > capacity[t] or start < 0 or start + count > ids.size:
        return  # flagged by assemble_offsets
    base, shift = values_base[t], row_base[t]
    for j in range(x, count, stride):
        v = i64[base + j] + shift
        ids[start + j] = v
        if check and (start + j >= ref_ids.size or ref_ids[start + j] != v):
            status[values_base.size] = 1


@register_jitable
def assemble_offsets(t, r, start, offs, offsets_base, capacity, rows, ids_size, offsets,
                     status, check, ref_offsets):
    """Table t's offset of row r (and the final one; the table's ids begin at `start`).
    status[t] gets the table's id count (from row 0) and status[tables] is set to 1 on
    any difference from the reference (when `check`) or offsets outside [0, capacity]:
    then no id is written."""
    tables = offsets_base.size
    count = table_count(t, offs, offsets_base, rows)
    ob = offsets_base[t]
    b0 = r if ob < 0 else offs[ob + r]
    b1 = r + 1 if ob < 0 else offs[ob + r + 1]
    if r == 0:
        status[t] = count
    if count < 0 or count > capacity[t] or b0 < 0 or b0 > b1 or b1 > count or \
            start < 0 or start + count > ids_size:
        status[tables] = 1
        return
    slot = t * rows + r
    offsets[slot] = start + b0
    last = t == tables - 1 and r == rows - 1
    if last:
        offsets[tables * rows] = start + b1
    if check and (ref_offsets.size != tables * rows + 1 or ref_offsets[slot] != start + b0
                  or (last and ref_offsets[tables * rows] != start + b1)):
        status[tables] = 1


@register_jitable
def assemble_dense(r, f32_bits, dense_base, dense_bits, status, check, ref_dense_bits):
    """Row r's dense features, each compared with the reference within 1 ulp (NaN equal
    to NaN): float bits on a line where neighbours differ by one."""
    for j in range(dense_base.size):
        v = f32_bits[dense_base[j] + r]
        dense_bits[r, j] = v
        if check:
            w = ref_dense_bits[r, j]
            nan_v = (v & SIGN_OFF) > INF_BITS
            nan_w = (w & SIGN_OFF) > INF_BITS
            a = np.int64(v) if v >= 0 else -np.int64(v & SIGN_OFF)
            b = np.int64(w) if w >= 0 else -np.int64(w & SIGN_OFF)
            if not (nan_v and nan_w) and (nan_v or nan_w or abs(a - b) > 1):
                status[status.size - 1] = 1


@functools.cache
def _starts_kernel():
    """The kernel that finds where each table's ids start in the table-major batch
    (starts[t], the id counts of the tables before it summed), once a batch, before
    `_kernel`'s: one block, a count a thread, then one thread adds them up. Every thread of
    the assembly walking all the counts before its table itself made O(tables^2) loads a
    batch: wide-4x's 104 tables took the assembly 0.24-0.28 ms on the H200 where its bytes
    ask 0.06; with this kernel, 0.076-0.082."""

    @cuda.jit
    def table_starts(offs, offsets_base, rows, starts):
        tables = offsets_base.size
        for u in range(cuda.threadIdx.x, tables, cuda.blockDim.x):
            starts[u + 1] = table_count(u, offs, offsets_base, rows)
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            starts[0] = 0
            for u in range(tables):
                starts[u + 1] += starts[u]

    return table_starts


@functools.cache
def _kernel():
    """The CUDA kernel (compiled once per process, lazily: the CPU never needs it).
    Grid (x over rows or more, tables + 1): block row t < tables writes table t's
    offsets and copies its ids (grid-stride) from starts[t] on (`_starts_kernel`), the
    last block row writes the dense features; threads past the rows only copy ids."""

    @cuda.jit
    def assemble(f32_bits, i64, offs, dense_base, values_base, offsets_base, capacity,
                 row_base, starts, rows, dense_bits, ids, offsets, status, check,
                 ref_dense_bits, ref_ids, ref_offsets):
        x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        t = cuda.blockIdx.y
        if t == values_base.size:
            if x < rows:
                assemble_dense(x, f32_bits, dense_base, dense_bits, status, check,
                               ref_dense_bits)
            return
        start = starts[t]
        if x < rows:
            assemble_offsets(t, x, start, offs, offsets_base, capacity, rows, ids.size,
                             offsets, status, check, ref_offsets)
        assemble_ids(t, x, start, cuda.gridDim.x * cuda.blockDim.x, i64, offs, values_base,
                     offsets_base, capacity, row_base, rows, ids, status, check, ref_ids)

    return assemble


def starts_block(tables: int) -> int:
    """Threads of `_starts_kernel`'s one block: a warp's multiple, a table a thread up
    to 1024."""
    return min(1024, 32 * max(1, -(-tables // 32)))


def grid_for(omap: OutputMap, threads: int = THREADS,
             ids_per_thread: int = ASSEMBLY_IDS_PER_THREAD) -> tuple[int, int]:
    """(blocks along each table's row, tables + 1): enough for a thread a row and about
    `ids_per_thread` ids a thread in the largest table (the ids are grid-strided; 0: a
    thread a row only)."""
    ids = max(omap.table_capacity, default=0) if ids_per_thread else 0
    return max(1, -(-omap.rows // threads), -(-ids // (threads * max(1, ids_per_thread)))), \
        len(omap.row_base) + 1


class DeviceAssembler:
    """Batches of one pool set on the GPU: `start(i)` launches the kernel for batch i
    (references i % len(refs)) on the given Numba stream and copies counts and flag to
    host memory; after the stream is synchronised, `batch(labels)` returns the Batch
    and whether it differed. The Batch's buffers are reused when the pool set is: the
    caller keeps the stream from starting before the trainer has used the last one."""

    def __init__(self, omap: OutputMap, pools: dict, refs: list[tuple[torch.Tensor, ...]],
                 device: torch.device,
                 ids_per_thread: int = ASSEMBLY_IDS_PER_THREAD) -> None:
        self.omap = omap
        t, rows = len(omap.row_base), omap.rows
        as_dev = functools.partial(torch.tensor, dtype=torch.int64, device=device)
        self.dense_bits = torch.zeros((rows, len(omap.dense_bases)), dtype=torch.int32,
                                      device=device)
        self.ids = torch.zeros(max(sum(omap.table_capacity), 1), dtype=torch.int64,
                               device=device)
        self.offsets = torch.zeros(t * rows + 1, dtype=torch.int64, device=device)
        self.status = torch.zeros(t + 1, dtype=torch.int64, device=device)
        self.starts = torch.zeros(t + 1, dtype=torch.int64, device=device)
        self.host_status = torch.zeros(t + 1, dtype=torch.int64, pin_memory=True)
        self.labels = torch.zeros(rows, device=device)
        """The batch's labels, copied in behind the kernel (`copy_labels`): ordered before
        the event the trainer waits for, and reused with the other outputs."""
        self.dense = self.dense_bits.view(torch.float32)
        """The dense features as the trainer reads them (a view made once)."""
        self._driver = device.type == "cuda" and driver.available()
        fixed = [as_dev(list(x)) for x in (omap.dense_bases, omap.table_values,
                                           omap.table_offsets, omap.table_capacity,
                                           omap.row_base)]
        self._keep = fixed  # the kernel's arguments point into these
        nb = cuda.as_cuda_array
        head = (pools["f32"].view(np.int32), pools["i64"], pools["offs"], *map(nb, fixed),
                nb(self.starts), rows, nb(self.dense_bits), nb(self.ids), nb(self.offsets),
                nb(self.status))
        self.starts_launch = BoundLaunch(_starts_kernel(), 1, starts_block(t),
                                         (pools["offs"], nb(fixed[2]), rows, nb(self.starts)))
        dummy = (torch.zeros((1, 1), dtype=torch.int32, device=device),
                 torch.zeros(1, dtype=torch.int64, device=device),
                 torch.zeros(1, dtype=torch.int64, device=device))
        self._keep += list(dummy)
        for d, _, _ in refs:
            if tuple(d.shape) != tuple(self.dense_bits.shape):
                raise ValueError(f"reference dense features are {tuple(d.shape)}, the "
                                 f"batch's {tuple(self.dense_bits.shape)}")
        kernel, blocks = _kernel(), grid_for(omap, THREADS, ids_per_thread)
        self.launches = [BoundLaunch(kernel, blocks, THREADS,
                                     (*head, 1, nb(d.view(torch.int32)), nb(i), nb(o)))
                         for d, i, o in refs]
        """Batch i assembled and compared with reference i % len(refs)."""
        self.plain_launch = BoundLaunch(kernel, blocks, THREADS, (*head, 0, *map(nb, dummy)))
        """Any batch assembled without the comparison (a third less memory traffic)."""

    def variant(self, i: int, compare: bool) -> int | None:
        """Which launch assembles batch i: its reference's index, None for the plain one."""
        return i % len(self.launches) if compare and self.launches else None

    def start(self, i: int, stream, compare: bool = True) -> None:
        """Launch batch i's assembly on the Numba stream `stream`, compared with its
        reference where `compare` and there are references, and copy its counts and flag
        back."""
        v = self.variant(i, compare)
        launch = self.plain_launch if v is None else self.launches[v]
        if self._driver and driver.use:  # two driver calls instead of two PyTorch ops
            address = stream_address(stream)
            status, nbytes = self.status.data_ptr(), self.status.numel() * 8
            driver.zero_words(status, nbytes // 4, address)
            self.starts_launch(stream)
            launch(stream)
            driver.copy_to_host(self.host_status.data_ptr(), status, nbytes, address)
            return
        self.status.zero_()
        self.starts_launch(stream)
        launch(stream)
        self.host_status.copy_(self.status, non_blocking=True)

    def copy_labels(self, staged: torch.Tensor, stream) -> None:
        """Copy the staged labels into `labels` on the torch stream `stream`, right after
        `start` on it (so the event recorded next covers the whole batch)."""
        with torch.cuda.stream(stream):
            self.labels.copy_(staged, non_blocking=True)

    def status_now(self) -> tuple[list[int], bool]:
        """Each table's id count and whether the batch differed from the reference, as
        `start` copied them back (the stream must have passed that copy); a count outside
        its table's capacity is a MismatchError."""
        status = self.host_status.tolist()
        counts, bad = status[:-1], bool(status[-1])
        for t, (n, cap) in enumerate(zip(counts, self.omap.table_capacity)):
            if not 0 <= n <= cap:  # corrupt offsets: the kernel wrote nothing out of range
                raise MismatchError(self.omap.table_features[t], -1, np.array([0, cap]),
                                    np.array([n]), "id count outside [0, capacity]")
        return counts, bad

    def batch(self) -> tuple[Batch, list[int], bool]:
        """The Batch, each table's id count, and whether it differed from the reference."""
        counts, bad = self.status_now()
        batch = self.uncounted_batch()
        batch.ids = batch.ids[: sum(counts)]
        return batch, counts, bad

    def uncounted_batch(self) -> Batch:
        """The Batch without waiting for the kernel: its ids are the whole buffer, the
        batch's own at its front (the offsets say how many), for a trainer whose kernels
        read only within the offsets (Model.reads_ids_by_offsets)."""
        return Batch(self.dense, self.ids, self.offsets, self.labels)
