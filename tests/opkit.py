"""Helpers for operator tests: one-node pipelines and a three-way comparison."""

from __future__ import annotations

import numpy as np
from corun.backend.columns import ColumnData, equal
from corun.backend.fusion import FusedGroup
from corun.backend.runner import PipelineProgram, run_numpy
from corun.spec import Column, DType, OpKind, OpNode, Pipeline, Shape, SparseOutput


def pipeline_of(nodes: list[OpNode], source: Column, outputs: list[str]) -> Pipeline:
    p0 = Pipeline.__new__(Pipeline)  # only to type the outputs
    object.__setattr__(p0, "name", "t")
    cols = {source.name: source}
    from corun.spec.pipeline import output_column

    for n in nodes:
        cols[n.name] = output_column(n.op, n.params, cols[n.input], n.name, n.name)
    dense = tuple(o for o in outputs if cols[o].dtype is DType.FLOAT32)
    sparse = tuple(SparseOutput(o, f"t_{o}") for o in outputs if cols[o].dtype.is_int)
    return Pipeline("t", (source,), tuple(nodes), dense, sparse)


def compare_all(p: Pipeline, inputs: dict[str, ColumnData], groups: list[list[str]],
                blocks: int = 2, threads: int = 8, division: str = "magic",
                warp_rows: bool = True, unroll: int = 1, list_scan: str = "rows",
                fixed_offsets: bool = True, short_lanes: int = 1,
                source_first: bool = False) -> None:
    """NumPy reference == Numba CPU == CUDA simulator, on every group output; on CUDA,
    list groups find their offsets as `list_scan` says (fusion.LIST_SCANS), lists of a
    fixed length as `fixed_offsets` says, and short lists' rows split over lanes as
    `short_lanes` says, and ngram chains' values once per input element with
    `source_first`."""
    ref = run_numpy(p, inputs)
    fused = [FusedGroup(p, g, f"g{i}", blocks, threads, division, warp_rows, unroll=unroll,
                        list_scan=list_scan, fixed_offsets=fixed_offsets,
                        short_lanes=short_lanes, source_first=source_first)
             for i, g in enumerate(groups)]
    cpu = PipelineProgram(p, fused, inputs).run_cpu()
    sim = PipelineProgram(p, fused, inputs).run_cuda_simulated()
    for name, got in list(cpu.items()) + list(sim.items()):
        ok, row = equal(ref[name], got)
        assert ok, (f"{name}: row {row}: ref {ref[name].row(row) if row >= 0 else ''} "
                    f"got {got.row(row) if row >= 0 else ''}")
    assert set(cpu) == set(sim)


def list_column(lists: list[list[int]], valid: list[bool] | None = None,
                dtype=np.int64) -> ColumnData:
    lengths = [len(x) if (valid is None or valid[i]) else 0 for i, x in enumerate(lists)]
    off = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    vals = [v for i, x in enumerate(lists) if valid is None or valid[i] for v in x]
    return ColumnData(np.array(vals, dtype), off, None if valid is None else np.array(valid))


INT_LIST = Column("x", DType.INT64, Shape.LIST, nullable=False)
INT_LIST_NULL = Column("x", DType.INT64, Shape.LIST, nullable=True)
FLOAT_SCALAR = Column("x", DType.FLOAT32, Shape.SCALAR, nullable=False)
FLOAT_SCALAR_NULL = Column("x", DType.FLOAT32, Shape.SCALAR, nullable=True)

__all__ = ["FLOAT_SCALAR", "FLOAT_SCALAR_NULL", "INT_LIST", "INT_LIST_NULL", "OpKind", "OpNode",
           "compare_all", "list_column", "pipeline_of"]
