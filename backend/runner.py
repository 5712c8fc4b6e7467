"""Run a whole Pipeline: NumPy reference, Numba CPU, or CUDA from fused groups.

All paths produce the trainer's inputs: dense float32 [rows, n_dense] and, per sparse
feature, values + offsets (TorchRec KeyedJaggedTensor layout), plus every column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from corun.backend.codegen import TILED_PARTS
from corun.backend.columns import ColumnData
from corun.backend.fusion import FusedGroup
from corun.backend.launch import BoundLaunch
from corun.backend.pools import HostPools, Layout
from corun.backend.reference import run_reference
from corun.spec import Model, Pipeline, SpecError


@dataclass(frozen=True, eq=False)
class TrainerInputs:
    dense: np.ndarray
    """float32 [rows, n_dense]."""
    sparse: dict[str, ColumnData]
    """table name -> int64 values + offsets."""


def trainer_inputs(pipeline: Pipeline, cols: Mapping[str, ColumnData]) -> TrainerInputs:
    dense = np.stack([cols[n].values for n in pipeline.dense_outputs], axis=1)
    sparse = {}
    for s in pipeline.sparse_outputs:
        c = cols[s.node]
        off = c.offsets if c.offsets is not None else np.arange(len(c.values) + 1, dtype=np.int64)
        sparse[s.table] = ColumnData(c.values.astype(np.int64), off)
    return TrainerInputs(dense.astype(np.float32), sparse)


def trainer_batch(pipeline: Pipeline, model: Model, outputs: Mapping[str, ColumnData],
                  labels: np.ndarray, tables: Sequence[int] | None = None,
                  dense: bool = True):
    """The trainer's Batch from a pipeline's output columns (ids as rows of the stacked
    tables); `tables` (indices into the model's tables) and `dense` pick a part of it."""
    from corun.backend.trainer import batch_from_tables, row_bases

    ti = trainer_inputs(pipeline, outputs)
    tables = range(len(model.tables)) if tables is None else tables
    base = row_bases(model)
    d = ti.dense if dense else np.zeros((len(labels), 0), np.float32)
    picked = [(ti.sparse[model.tables[k].name].values, ti.sparse[model.tables[k].name].offsets)
              for k in tables]
    return batch_from_tables(d, picked, [base[k] for k in tables], labels)


def check_groups(pipeline: Pipeline, groups: Sequence[Sequence[str]],
                 given: frozenset[str] = frozenset()) -> None:
    """Every node not `given` (computed elsewhere, e.g. on the host CPU) in exactly one
    group, groups in an order that respects dependencies."""
    seen: dict[str, int] = {}
    for g, nodes in enumerate(groups):
        for n in nodes:
            if n not in pipeline.node_by_name:
                raise SpecError(f"groups[{g}]", n, f"a node of pipeline {pipeline.name!r}")
            if n in seen:
                raise SpecError(f"groups[{g}]", n, f"a node in one group (also groups[{seen[n]}])")
            seen[n] = g
    missing = [n for n in pipeline.order if n not in seen and n not in given]
    if missing:
        raise SpecError("groups", missing[:3], f"every node in a group ({len(missing)} are not)")
    for n in pipeline.nodes:
        src = n.input
        if src in seen and n.name in seen and seen[src] > seen[n.name]:
            raise SpecError(f"groups[{seen[n.name]}]", n.name,
                            f"after the group computing its input {src!r} (groups[{seen[src]}])")


class PipelineProgram:
    """Fused groups bound to a pool layout for one batch shape.

    `inputs` are the columns staged into the pools before the kernels run: the raw
    inputs, or (for a plan that runs some nodes on the host CPU) any mix of raw inputs
    and host-computed node outputs. They sit first in every pool, so one copy of each
    pool's prefix (`staged_size`) stages a batch. `capacity` reserves room for staged
    columns whose size varies from batch to batch (default: this batch's size).
    `elsewhere` names nodes computed outside the kernels (on the host CPU)."""

    def __init__(self, pipeline: Pipeline, groups: Sequence[FusedGroup],
                 inputs: Mapping[str, ColumnData],
                 capacity: Mapping[str, int] | None = None,
                 elsewhere: Sequence[str] = ()) -> None:
        raw = {c.name for c in pipeline.inputs}
        check_groups(pipeline, [g.nodes for g in groups],
                     frozenset(inputs) - raw | frozenset(elsewhere))
        self.pipeline, self.groups = pipeline, list(groups)
        rows = next(iter(inputs.values())).rows
        self.layout = Layout(pipeline, rows)
        cols = pipeline.columns
        needed = {c.source for g in self.groups for c in g.chains}
        produced = {c.sink for g in self.groups for c in g.chains}
        missing = sorted(needed - produced - set(inputs))
        if missing:
            raise SpecError("inputs", missing[:3], "every column the kernels read")
        for name, data in inputs.items():
            if name not in cols:
                raise SpecError("inputs", name, f"a column of pipeline {pipeline.name!r}")
            data.check(cols[name], name)
            if data.rows != rows:
                raise SpecError(f"inputs.{name}", data.rows, f"{rows} rows like the others")
            self.layout.add(name, max(len(data.values), (capacity or {}).get(name, 0)))
        self.staged_size = dict(self.layout.size)
        for g in self.groups:
            self.layout.add_group(g.chains)
        self.desc = self.layout.descriptors()
        self.bound = [g.bind(self.layout) for g in self.groups]
        self.host = HostPools(self.layout)
        self._tile_states: dict[int, np.ndarray] = {}
        for name, data in inputs.items():
            self.host.pack(name, data)

    def _scan_host(self, offs: np.ndarray, group: FusedGroup) -> None:
        base, count = group.list_offsets_block(self.layout)
        if count:
            block = offs[base : base + count * (self.layout.rows + 1)].reshape(count, -1)
            block[:, 0] = 0
            np.cumsum(block[:, 1:], axis=1, out=block[:, 1:])

    def run_cpu(self) -> dict[str, ColumnData]:
        """Numba CPU: each group's kernels run with prange over rows on all cores."""
        return self._run_on_host("cpu")

    def run_cuda_simulated(self) -> dict[str, ColumnData]:
        """CUDA kernels under NUMBA_ENABLE_CUDASIM: the pools stay NumPy arrays."""
        return self._run_on_host("cuda")

    def _run_on_host(self, target: str) -> dict[str, ColumnData]:
        for i in range(len(self.groups)):
            self.launch_on_host(i, target)
        return self.outputs()

    def launch_on_host(self, index: int, target: str = "cpu") -> None:
        """Run group `index` on the host pools: Numba CPU, or the CUDA simulator."""
        h, g = self.host, self.groups[index]
        src, dst = self.bound[index]
        for part in g.parts(target):
            kernel = g.kernel(part, target)
            tail = [self.tile_state(index)] if part in TILED_PARTS else g.block_maps[part]
            args = (self.desc, h.f32, h.i64, h.offs, h.valid, g.fpar, g.ipar, g.aux_f,
                    g.aux_i, g.slot_sig, src, dst, *tail, self.layout.rows)
            launch = kernel if target == "cpu" else kernel[g.grid(part), g.threads]
            launch(*args)
            if part == "lengths":
                self._scan_host(h.offs, g)
            if part == "totals":
                regions = self.tile_state(index).reshape(g.slots, -1)
                np.cumsum(regions, axis=1, out=regions)

    def tile_state(self, index: int) -> np.ndarray:
        """Group `index`'s tiled kernels' state on the host, kept from launch to launch
        as on the GPU."""
        if index not in self._tile_states:
            self._tile_states[index] = self.groups[index].tile_state(self.layout.rows)
        return self._tile_states[index]

    def to_device(self) -> DeviceState:
        """Copy pools and per-group parameters to the GPU (real CUDA only)."""
        return DeviceState(self)

    def outputs(self) -> dict[str, ColumnData]:
        return {n: self.host.unpack(n) for n in self.layout.names
                if n in self.pipeline.node_by_name}


def run_numpy(pipeline: Pipeline, inputs: Mapping[str, ColumnData]) -> dict[str, ColumnData]:
    return {k: v for k, v in run_reference(pipeline, inputs).items()
            if k in pipeline.node_by_name}


class DeviceState:
    """A program's pools and parameters on the GPU, ready to launch repeatedly.

    The row-wise prefix sum of list offsets runs through PyTorch (`torch.cumsum` on a
    zero-copy view of the Numba array), on the same stream as the kernels."""

    def __init__(self, program: PipelineProgram) -> None:
        from numba import cuda

        self.program = program
        h = program.host
        self.pools = {k: cuda.to_device(getattr(h, k)) for k in ("f32", "i64", "offs", "valid")}
        self.desc = cuda.to_device(program.desc)
        self.groups = []
        for g, (src, dst) in zip(program.groups, program.bound):
            arrs = [cuda.to_device(a) for a in (g.fpar, g.ipar, g.aux_f, g.aux_i, g.slot_sig,
                                                src, dst)]
            maps = {part: [cuda.to_device(a) for a in m] for part, m in g.block_maps.items()}
            if g.list_scan != "rows":  # the tiled kernels' counters, statuses or totals
                state = [cuda.to_device(g.tile_state(program.layout.rows))]
                maps.update({part: state for part in g.parts("cuda")})
            arrs = (arrs, maps)
            self.groups.append((g, arrs, g.list_offsets_block(program.layout)))
        self._launches: dict[tuple[int, str], BoundLaunch] = {}
        import torch

        self.views = {k: torch.as_tensor(v, device="cuda") for k, v in self.pools.items()}
        """Zero-copy torch views of the pools (staging copies, scans, batch assembly)."""
        rows = program.layout.rows
        self._scans: dict[int, tuple] = {}
        """Each list group's scan views (`scan_views`), made once over one scratch buffer
        sized for the largest group (the groups of one pool set scan one after another): a
        graph that captured a scan (backend/batch_graphs.py) keeps the addresses it saw,
        so the buffer must never be replaced."""
        sizes = [count * (rows + 1) if "lengths" in g.parts("cuda") else 0
                 for g, _, (_, count) in self.groups]
        scratch = torch.empty(max(sizes, default=0) or 1, dtype=torch.int64, device="cuda")
        for index, ((_, _, (base, count)), n) in enumerate(zip(self.groups, sizes)):
            if n:
                self._scans[index] = scan_views(self.views["offs"][base : base + n], count,
                                                rows, scratch)
        for index, (g, (_, maps), _) in enumerate(self.groups):
            if "totals" in maps:  # tile totals: a scan of their own, over a buffer of their own
                totals = torch.as_tensor(maps["totals"][0], device="cuda")
                tiles = g.tiles(rows)
                self._scans[index] = scan_views(
                    totals, g.slots, tiles,
                    torch.empty(totals.numel(), dtype=torch.int64, device="cuda"))

    def launches_per_batch(self) -> int:
        """Kernel launches one batch costs (FusedGroup.launches)."""
        return sum(g.launches("cuda") for g, _, _ in self.groups)

    def run(self, stream=0, mark=None) -> None:
        """Launch every group once on `stream` (a Numba stream, 0 = default). `mark`, if
        given, is called as mark(step, group name) after each step (lengths, scan,
        values; or single), for a breakdown with CUDA events."""
        for i in range(len(self.groups)):
            self.launch(i, stream, mark)

    def launch(self, index: int, stream=0, mark=None, through_numba: bool = False) -> None:
        """Launch group `index` on `stream`; its scan runs on torch's current stream,
        which the caller makes the same stream. Arguments are packed once per kernel
        (backend/launch.py); `through_numba` has Numba pack them every time."""
        g = self.groups[index][0]
        for part in g.parts("cuda"):
            bound = self.bound(index, part)
            bound.through_numba(stream) if through_numba else bound(stream)
            if mark is not None:
                mark(part, g.name)
            if part in ("lengths", "totals"):
                scan_with(*self._scans[index])
                if mark is not None:
                    mark("scan", g.name)

    def bound(self, index: int, part: str) -> BoundLaunch:
        """Group `index`'s `part` kernel over these pools, its arguments packed once (a
        benchmark can time one part alone with it)."""
        key = (index, part)
        if key not in self._launches:
            p = self.pools
            g, (arrs, maps), _ = self.groups[index]
            args = (self.desc, p["f32"], p["i64"], p["offs"], p["valid"], *arrs,
                    *maps[part], self.program.layout.rows)
            self._launches[key] = BoundLaunch(g.kernel(part, "cuda"), g.grid(part),
                                              g.threads, args)
        return self._launches[key]

    def outputs(self) -> dict[str, ColumnData]:
        h = self.program.host
        for k, dev in self.pools.items():
            dev.copy_to_host(getattr(h, k))
        return self.program.outputs()


def scan_regions(flat, count: int, rows: int, buf) -> None:
    """Lengths to offsets, in place, for `count` regions of rows + 1 entries whose first
    entry is 0 (torch tensors). One 1-D scan over all regions (PyTorch uses CUB for 1-D; a
    2-D scan along the last dim runs a slow per-row kernel: 11 ms for 27 x 4M on the
    H200), then each region subtracts its own start: two passes over the offsets."""
    scan_with(*scan_views(flat, count, rows, buf))


def scan_views(flat, count: int, rows: int, buf) -> tuple:
    """The views `scan_with` reads and writes, to make once for pools that stay put."""
    out = buf[: flat.numel()]
    grid = out.view(count, rows + 1)
    return flat, out, grid, grid[:, :1], flat.view(count, rows + 1)


def scan_with(flat, out, grid, starts, regions) -> None:
    """`scan_regions` over views from `scan_views`."""
    import torch

    torch.cumsum(flat, 0, out=out)
    torch.sub(grid, starts, out=regions)


def preprocessed_batches(model: Model, pipeline: Pipeline, n: int, rng: np.random.Generator,
                         zipf_a: float = 1.1):
    """`n` distinct trainer batches preprocessed on the CPU (Numba), labels at random; raw
    ids zipf-skewed (`zipf_a` <= 1: uniform, backend.data.synthetic_inputs)."""
    from corun.backend.data import synthetic_inputs

    group = [FusedGroup(pipeline, pipeline.order, "all")]
    out = []
    for _ in range(n):
        raw = synthetic_inputs(pipeline, model.batch_per_gpu, rng, zipf_a=zipf_a)
        labels = (rng.random(model.batch_per_gpu) < 0.25).astype(np.float32)
        outputs = PipelineProgram(pipeline, group, raw).run_cpu()
        out.append(trainer_batch(pipeline, model, outputs, labels))
    return out
