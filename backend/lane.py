"""One lane of the executor: a set of fused kernels over one row range, with what it
needs per batch — a pool set per batch in flight (training reads one while the next
ones are filled), the staged input copy, the assembly of its share of the trainer's
inputs, and its check.

A GPU has one lane over its local batch; with the table-owner mapping, the owner of a
table has a second lane over the global batch for the features it preprocesses itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
from corun.backend import driver
from corun.backend.assembly import Assembler, HostBatch, check_batch_rows, differs, output_map
from corun.backend.batch_graphs import WorkGraphs
from corun.backend.check import MismatchError
from corun.backend.columns import ColumnData
from corun.backend.cpu_feeder import POOLS, stage_into, staging_buffers
from corun.backend.device_assembly import DeviceAssembler
from corun.backend.faults import faults
from corun.backend.fusion import FusedGroup
from corun.backend.runner import PipelineProgram
from corun.backend.settings import ASSEMBLY_IDS_PER_THREAD
from corun.backend.streams import HostPoolSet, Streams
from corun.backend.trainer import Batch
from corun.spec import FusedKernel, Model, Pipeline


class Lane:
    """Kernels over one row range (the columns given to `build`) producing `tables`
    (indices into the model's tables) and, if `dense`, the dense features; `host_nodes`
    arrive computed by host workers, `elsewhere` are nodes other lanes or the host run."""

    def __init__(self, name: str, pipeline: Pipeline, model: Model,
                 kernels: Sequence[FusedKernel], host_nodes: Sequence[str],
                 elsewhere: Sequence[str], tables: Sequence[int], dense: bool) -> None:
        self.name, self.pipeline, self.model = name, pipeline, model
        self.kernels, self.host_nodes = list(kernels), list(host_nodes)
        self.tables, self.dense = list(tables), dense
        self.elsewhere = list(elsewhere)
        self.groups = [FusedGroup(pipeline, [n for n in pipeline.order if n in set(k.nodes)],
                                  k.name, k.blocks, k.threads_per_block,
                                  warp_rows=k.warp_rows, fixed_offsets=k.fixed_offsets,
                                  source_first=k.source_first)
                       for k in kernels]
        reads = {c.source for g in self.groups for c in g.chains}
        produced = {c.sink for g in self.groups for c in g.chains}
        lane_tables = {model.tables[k].name for k in tables}
        outputs = {s.node for s in pipeline.sparse_outputs if s.table in lane_tables} | (
            set(pipeline.dense_outputs) if dense else set())
        names = [c.name for c in pipeline.inputs] + self.host_nodes
        self.staged = [n for n in names if (n in reads and n not in produced) or
                       (n in self.host_nodes and n in outputs)]
        self.suffix = "" if name == "local" else f":{name}"

    def build(self, columns: Sequence[Mapping[str, ColumnData]], labels: Sequence[np.ndarray],
              references: Sequence[HostBatch], device: torch.device, staged_ahead: bool,
              check: bool = True, slots: int = 2, graphs: bool = False,
              ids_per_thread: int = ASSEMBLY_IDS_PER_THREAD,
              compared_batches: int | None = None,
              capture_sides: dict[int, object] | None = None) -> None:
        """`slots` pool sets (batch i uses set i % slots: one per batch preprocessed
        ahead, plus the one training reads), their assemblers and (if `check`) the
        references on the device; staging buffers for every raw batch when the staged
        columns are known ahead (no host workers). `graphs`: on a GPU, each batch's
        staging, kernel launches and assembly replayed as CUDA graphs
        (backend/batch_graphs.py; `capture_sides`: Streams.capture_sides).
        `ids_per_thread`: the assembly kernel's grid
        (device_assembly.grid_for). `compared_batches`: with `check`, only batches below
        that index are compared with their references (None: every batch); the others are
        assembled without the comparison, their id counts still range-checked."""
        cuda = device.type == "cuda"
        on = graphs and cuda
        self.graphs = WorkGraphs(on, torch.cuda.Stream(device) if on else None,
                                 sides=capture_sides)
        self.slots = slots
        cols = self.pipeline.columns
        for c in columns[1:]:  # the first is checked by its program
            for n in self.staged:
                c[n].check(cols[n], n)
        capacity = {n: max(len(c[n].values) for c in columns) for n in self.staged}
        first = {n: columns[0][n] for n in self.staged}
        programs = [PipelineProgram(self.pipeline, self.groups, first, capacity, self.elsewhere)
                    for _ in range(slots)]
        self.layout, self.sizes = programs[0].layout, programs[0].staged_size
        with faults(f"copying the {self.name} lane's pools to the GPU"):
            self.sets = [p.to_device() if cuda else HostPoolSet(p) for p in programs]
        self.omap = output_map(self.layout, self.pipeline, self.model, self.tables, self.dense)
        self.references = list(references)
        self.check_on = check
        self.compared_batches = compared_batches
        self.device_refs = [tuple(torch.from_numpy(x).to(device) for x in
                                  (r.dense, r.ids, r.offsets)) for r in references] \
            if check else []
        if cuda:  # one kernel per batch assembles and checks it
            self.kernel_assembly = [DeviceAssembler(self.omap, s.pools, self.device_refs,
                                                    device, ids_per_thread)
                                    for s in self.sets]
            self.assemblers, self.flags = [], []
        else:  # the PyTorch Assembler and `differs` (the kernel's reference in the tests)
            self.kernel_assembly = []
            self.assemblers = [Assembler(self.omap, s.views) for s in self.sets]
            self.flags = [torch.zeros(1, dtype=torch.bool) for _ in range(slots)]
        rows = self.layout.rows
        self.labels = [torch.zeros(rows, device=device) for _ in range(slots)]
        self.raw_labels = [torch.from_numpy(x).pin_memory() if cuda else torch.from_numpy(x)
                           for x in labels]
        self.staging = []
        if staged_ahead:
            for c in columns:
                bufs = staging_buffers(self.sizes)
                if cuda:
                    bufs = {k: v.pin_memory() for k, v in bufs.items()}
                stage_into(self.layout, bufs, {n: c[n] for n in self.staged})
                self.staging.append(bufs)
        self._sliced: dict[tuple[int, int], list] = {}  # (slot, raw batch): copies
        self._addressed: dict[tuple[int, int], list] = {}  # the same, as addresses
        self._driver = cuda and driver.available()
        self.copied: dict[int, object] = {}
        self.opened: dict[int, object] = {}
        self.assembled: dict[int, object] = {}
        self.checked: dict[int, object] = {}
        self.uncounted: dict[int, object] = {}  # batch -> its assembly's event (_settle)
        self.launched: dict[int, object] = {}  # batch -> the end of its last kernel so far
        self.pool_free: list[object] = [None] * slots

    def compares(self, i: int) -> bool:
        """Whether batch i is compared with its reference."""
        return self.check_on and (self.compared_batches is None or i < self.compared_batches)

    def stage(self, S: Streams, i: int, bufs=None):
        """Copy batch i's staged columns and labels into pool set i % slots; returns the
        copy's (start, end) events."""
        k, raw = i % self.slots, i % len(self.raw_labels)
        pairs = self._copies(k, raw) if bufs is None else self._pairs(k, raw, bufs)
        # every call names its stream: no `S.use` (PyTorch's stream context looks the
        # current stream up twice, some microseconds of the launching thread's each)
        S.wait(S.copy, self.pool_free[k])
        t0 = S.event(S.copy)
        if bufs is None:  # staged ahead: the same copies whenever raw batch `raw` comes
            fast = self._addresses(k, raw) if self._driver and driver.use else None
            self.graphs.run(("stage", k, raw), lambda s: self._copy(S, s, pairs, fast),
                            S.copy)
        else:
            self._copy(S, S.copy, pairs, None)
        self.copied[i] = S.event(S.copy)
        return t0, self.copied[i]

    @staticmethod
    def _copy(S: Streams, stream, pairs, addresses) -> None:
        """The staging copies on `stream`: driver calls over `addresses` (`pairs` as
        addresses) where given, PyTorch copies of `pairs` otherwise."""
        if addresses is not None:
            for dst, src, nbytes in addresses:
                driver.copy_to_device(dst, src, nbytes, stream.cuda_stream)
            return
        with S.use(stream):
            for dst, src in pairs:
                dst.copy_(src, non_blocking=True)

    def _pairs(self, k: int, raw: int, bufs) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(pool view, staged buffer) of every copy that stages raw batch `raw` into pool
        set k, the labels last."""
        pairs = [(self.sets[k].views[name][:n], bufs[name][:n])
                 for name in POOLS if (n := self.sizes[name])]
        return pairs + [(self.labels[k], self.raw_labels[raw])]

    def _addresses(self, k: int, raw: int) -> list[tuple[int, int, int]]:
        """`_copies` as (device address, pinned host address, bytes) for the driver."""
        key = (k, raw)
        if key not in self._addressed:
            pairs = self._copies(k, raw)
            for dst, src in pairs:
                if not (src.is_pinned() and dst.is_cuda and src.is_contiguous()
                        and dst.is_contiguous() and dst.dtype == src.dtype):
                    raise ValueError(f"staging copy {tuple(src.shape)} {src.dtype} -> "
                                     f"{tuple(dst.shape)} {dst.dtype}: not pinned and "
                                     "contiguous on both sides")
            self._addressed[key] = [(dst.data_ptr(), src.data_ptr(),
                                     src.numel() * src.element_size()) for dst, src in pairs]
        return self._addressed[key]

    def _copies(self, k: int, raw: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """`_pairs` of the buffers staged ahead, sliced once (each slice costs the host
        thread that launches training a few microseconds a batch)."""
        key = (k, raw)
        if key not in self._sliced:
            self._sliced[key] = self._pairs(k, raw, self.staging[raw])
        return self._sliced[key]

    def launch(self, S: Streams, i: int, index: int, stream):
        """Launch kernel `index` for batch i on `stream`; returns its (start, end) events."""
        kernel = self.kernels[index]
        S.wait(stream, self.copied[i])
        t0 = S.event(stream)
        k = i % self.slots
        with faults(f"launching fused kernel {kernel.name!r} ({len(kernel.nodes)} op "
                    "nodes)"):
            self.graphs.run(("launch", k, index), lambda s: self._launch_on(S, s, k, index),
                            stream)
        self.launched[i] = S.event(stream)
        return t0, self.launched[i]

    def _launch_on(self, S: Streams, stream, k: int, index: int) -> None:
        """Kernel `index` over pool set k on `stream` (its list scan too)."""
        with S.use(stream):
            self.sets[k].launch(index, S.numba(stream))

    def assemble(self, S: Streams, i: int, before_done, consumed) -> None:
        """Enqueue batch i's assembly on the assembly stream (Streams.assembly), after
        its input copy, its kernels (the last one launched, and those before the
        iteration: `before_done`) and the trainer's last read of batch i - 2, whose
        buffers it reuses (`consumed`). Called right after the lane's last kernel for
        batch i is launched: queued behind a long training stage instead, the
        low-priority assembly waited for that stage and so did the host (heavy b4096 on
        the H200: 5.1 ms of host wait per iteration). On the GPU the assembly kernel starts
        here; `finish` waits for it."""
        S.wait(S.assembly, self.copied[i])
        S.wait(S.assembly, self.launched.pop(i, None))
        S.wait(S.assembly, before_done)
        S.wait(S.assembly, consumed)
        self.opened[i] = S.event(S.assembly)
        if self.kernel_assembly:
            assembler = self.kernel_assembly[i % self.slots]
            k = i % self.slots
            compare = self.compares(i)
            key = ("assemble", k, assembler.variant(i, compare))

            def work(s) -> None:
                assembler.start(i, S.numba(s), compare)
                assembler.copy_labels(self.labels[k], s)

            self.graphs.run(key, work, S.assembly)
            self.assembled[i] = S.event(S.assembly)

    def finish(self, S: Streams, i: int, waited: Callable[[float], None],
               counted: bool = True) -> tuple[Batch, list[int] | None, object]:
        """Batch i, assembled (see `assemble`, which must come first) and checked where it
        lives: one kernel on the GPU (`_finish_kernel`), PyTorch on the CPU; the host
        waits for its id counts (`waited(ms)`), unless `counted` is off and the kernel
        assembles it: the batch then holds the whole ids buffer, its counts None, and
        `check` reads them later. Returns the batch, its ids per table and the event
        that opened the assembly."""
        k = i % self.slots
        start = self.opened.pop(i)
        if self.kernel_assembly:  # no PyTorch op on the current stream: no `S.use`
            batch, counts = self._finish_kernel(S, i, waited, counted)
            return batch, counts, start
        with S.use(S.assembly):
            stacked = self.assemblers[k].offsets()
            h0 = time.perf_counter()
            S.sync(S.event(S.assembly))
            waited((time.perf_counter() - h0) * 1e3)
            with faults(f"assembling batch {i} ({self.name} lane)"):
                batch = self.assemblers[k].batch(stacked, self.labels[k])
            counts = self.assemblers[k].totals.tolist()
            self.pool_free[k] = S.event(S.assembly)
            if self.compares(i):
                ref = self.device_refs[i % len(self.device_refs)]
                self.flags[k].copy_(differs(batch, ref), non_blocking=True)
                self.checked[i] = (S.event(S.assembly), batch, None)
        return batch, counts, start

    def _finish_kernel(self, S: Streams, i: int, waited: Callable[[float], None],
                       counted: bool) -> tuple[Batch, list[int] | None]:
        """`finish` on the GPU: the host waits for the assembly kernel and the copy of its
        id counts and flag (the event `assemble` recorded after them, not the stream's
        latest: kernels released since for other lanes need not finish first), or, not
        `counted`, leaves both for `check`."""
        k = i % self.slots
        done = self.assembled.pop(i)
        if counted:
            h0 = time.perf_counter()
            S.sync(done)
            waited((time.perf_counter() - h0) * 1e3)
            with faults(f"assembling batch {i} ({self.name} lane)"):
                batch, counts, bad = self.kernel_assembly[k].batch()
        else:
            batch, counts, bad = self.kernel_assembly[k].uncounted_batch(), None, None
            self.uncounted[i] = done
        self.pool_free[k] = done
        if self.compares(i):
            self.checked[i] = (None, batch, bad)
        return batch, counts

    def _settle(self, S: Streams, i: int) -> tuple[list[int], bool] | None:
        """Batch i's id counts and flag where `finish` left them (None where it read
        them): the host waits for its assembly, long queued, and the counts' range is
        checked whether or not the batch is compared."""
        done = self.uncounted.pop(i, None)
        if done is None:
            return None
        S.sync(done)
        with faults(f"assembling batch {i} ({self.name} lane)"):
            return self.kernel_assembly[i % self.slots].status_now()

    def check(self, S: Streams, i: int) -> int:
        """Rows of batch i found equal to the reference (all of them, or a MismatchError
        naming the first differing feature and row). Called an iteration after batch i
        was assembled, so its flag has long arrived: the host waits for nothing. A batch
        `finish` did not count is counted here (`_settle`), compared or not."""
        settled = self._settle(S, i)
        if not self.compares(i):
            return 0
        done, batch, bad = self.checked.pop(i)
        if settled is not None:  # the kernel's counts and flag, read only now
            counts, bad = settled
            batch = Batch(batch.dense, batch.ids[: sum(counts)], batch.offsets, batch.labels)
        elif bad is None:  # the PyTorch check's flag, copied back after `done`
            S.sync(done)
            bad = bool(self.flags[i % self.slots][0])
        first_by_host = i == 0 and bool(self.kernel_assembly)
        if not bad and not first_by_host:
            return self.layout.rows
        want = self.references[i % len(self.references)]  # find and name the difference
        check_batch_rows(self.omap, HostBatch.of(batch), want, np.arange(self.layout.rows))
        if not bad:  # batch 0 of the kernel path, also compared on the host: equal
            return self.layout.rows
        raise MismatchError(f"(batch {i})", -1, np.array([]), np.array([]),
                            "differs on the device, but no row differs on the host")
