"""The GPU's one-kernel batch assembly and check (backend/device_assembly.py), run in the
CUDA simulator against the PyTorch Assembler and `differs` it replaces on the GPU."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from corun.backend.assembly import Assembler, differs, output_map
from corun.backend.data import synthetic_inputs
from corun.backend.device_assembly import _kernel, _starts_kernel, grid_for, starts_block
from corun.backend.fusion import FusedGroup
from corun.backend.runner import PipelineProgram
from corun.backend.settings import ASSEMBLY_IDS_PER_THREAD

from corun import spec
from corun.workload import shrink_tables

ROWS = 16


def program(name: str, model_name: str):
    """Pools after the pipeline ran (Numba CPU), the output map, the PyTorch batch."""
    model, pipe = shrink_tables(replace(spec.model_preset(model_name), batch_per_gpu=ROWS),
                                spec.pipeline_preset(name), 300)
    inputs = synthetic_inputs(pipe, ROWS, np.random.default_rng(7), vary_lengths=True)
    prog = PipelineProgram(pipe, [FusedGroup(pipe, pipe.order)], inputs)
    prog.run_cpu()
    omap = output_map(prog.layout, pipe, model)
    views = {k: torch.from_numpy(getattr(prog.host, k)) for k in ("f32", "i64", "offs")}
    asm = Assembler(omap, views)
    want = asm.batch(asm.offsets(), torch.zeros(ROWS))
    return prog.host, omap, want


def assemble(host, omap, ref=None, grid=None):
    """Run the kernel in the simulator (on `grid`, grid_for's by default); (dense, ids,
    offsets, status) as NumPy arrays."""
    t = len(omap.row_base)
    dense_bits = np.zeros((omap.rows, len(omap.dense_bases)), np.int32)
    ids = np.zeros(sum(omap.table_capacity), np.int64)
    offsets = np.zeros(t * omap.rows + 1, np.int64)
    status = np.zeros(t + 1, np.int64)
    fixed = [np.array(x, np.int64) for x in (omap.dense_bases, omap.table_values,
                                             omap.table_offsets, omap.table_capacity,
                                             omap.row_base)]
    if ref is None:
        check, refs = 0, (np.zeros((1, 1), np.int32), np.zeros(1, np.int64),
                          np.zeros(1, np.int64))
    else:
        check, refs = 1, (ref.dense.numpy().view(np.int32), ref.ids.numpy(),
                          ref.offsets.numpy())
    starts = np.zeros(t + 1, np.int64)
    _starts_kernel()[1, starts_block(t)](host.offs, fixed[2], omap.rows, starts)
    _kernel()[grid or grid_for(omap, 32), 32](host.f32.view(np.int32), host.i64, host.offs,
                                         *fixed, starts, omap.rows, dense_bits, ids,
                                         offsets, status, check, *refs)
    return dense_bits.view(np.float32), ids, offsets, status


@pytest.fixture(scope="module")
def multihot():
    return program("multihot", "mlperf-dcnv2")


@pytest.mark.parametrize("name,model", [("kaggle", "criteo-kaggle"), ("heavy", "heavy"),
                                        ("multihot", "mlperf-dcnv2")])
def test_kernel_builds_the_pytorch_batch(name, model):
    host, omap, want = program(name, model)
    dense, ids, offsets, status = assemble(host, omap, want)
    counts = status[:-1]
    assert status[-1] == 0  # equal to itself
    np.testing.assert_array_equal(dense.view(np.int32), want.dense.numpy().view(np.int32))
    np.testing.assert_array_equal(ids[: counts.sum()], want.ids.numpy())
    np.testing.assert_array_equal(offsets, want.offsets.numpy())
    assert counts.sum() == len(want.ids)


def test_a_wider_block_row_builds_the_same_batch(multihot):
    """Threads past the rows copy ids only: the batch is the same at any width."""
    host, omap, want = multihot
    bx, by = grid_for(omap, 32)  # grid_for's own width: test_kernel_builds_the_pytorch_batch
    dense, ids, offsets, status = assemble(host, omap, want, (3 * bx + 1, by))
    assert status[-1] == 0
    np.testing.assert_array_equal(ids[: status[:-1].sum()], want.ids.numpy())
    np.testing.assert_array_equal(offsets, want.offsets.numpy())
    np.testing.assert_array_equal(dense.view(np.int32), want.dense.numpy().view(np.int32))


def test_the_block_row_widens_with_the_largest_table():
    """A thread a row, or about ASSEMBLY_IDS_PER_THREAD ids a thread in the largest table."""
    from corun.backend.assembly import OutputMap

    def omap(rows, capacities):
        t = len(capacities)
        return OutputMap(rows, (), (), (0,) * t, (0,) * t, tuple(capacities),
                         ("f",) * t, (0,) * t)

    assert grid_for(omap(8192, [8192] * 26)) == (32, 27)  # kaggle: one id a row
    wide = grid_for(omap(16384, [1_300_000, 10]))
    assert wide == (-(-1_300_000 // (256 * ASSEMBLY_IDS_PER_THREAD)), 3)
    assert grid_for(omap(1, [])) == (1, 1)


def test_table_starts_sum_the_counts_before_each_table():
    """starts[t] = the id counts of tables 0 .. t-1, a table with no offsets counting one
    id a row; with fewer threads than tables (the loop strides) and with more."""
    rows, rng = 5, np.random.default_rng(3)
    counts = rng.integers(0, 50, size=70)
    offs, bases = [], []
    for k, c in enumerate(counts):
        if k % 7 == 3:  # one id a row: no offsets
            bases.append(-1)
            counts[k] = rows
            continue
        bases.append(len(offs))
        offs += list(np.sort(rng.integers(0, c + 1, size=rows))) + [int(c)]
        offs[bases[-1]] = 0
    want = np.concatenate([[0], np.cumsum(counts)])
    for threads in (32, starts_block(len(counts))):
        starts = np.zeros(len(counts) + 1, np.int64)
        _starts_kernel()[1, threads](np.array(offs, np.int64), np.array(bases, np.int64),
                                     rows, starts)
        np.testing.assert_array_equal(starts, want)
    assert [starts_block(n) for n in (1, 32, 33, 104, 5000)] == [32, 32, 64, 128, 1024]


def changed(batch, **parts):
    return replace(batch, **parts)


def test_check_flags_what_differs_and_follows_the_ulp_rule(multihot):
    host, omap, want = multihot
    ids = want.ids.clone()
    ids[len(ids) // 2] += 1
    assert assemble(host, omap, changed(want, ids=ids))[3][-1] == 1
    offsets = want.offsets.clone()
    offsets[5] += 1
    assert assemble(host, omap, changed(want, offsets=offsets))[3][-1] == 1
    short = want.ids[:-1]  # one id fewer in the reference
    assert assemble(host, omap, changed(want, ids=short))[3][-1] == 1
    for ulps, flagged in ((1, 0), (2, 1)):
        bits = want.dense.clone().view(torch.int32)
        bits[3, 0] += ulps
        got = assemble(host, omap, changed(want, dense=bits.view(torch.float32)))[3][-1]
        assert got == flagged, ulps
        # the PyTorch check it replaces agrees
        ref = (bits.view(torch.float32), want.ids, want.offsets)
        assert bool(differs(want, ref)) == bool(flagged)


def test_nan_equals_nan_but_not_a_number(multihot):
    host, omap, want = multihot
    f32 = host.f32.copy()
    f32[omap.dense_bases[0] + 2] = np.nan
    host2 = SimpleNamespace(f32=f32, i64=host.i64, offs=host.offs)
    dense_nan = want.dense.clone()
    dense_nan[2, 0] = float("nan")
    assert assemble(host2, omap, changed(want, dense=dense_nan))[3][-1] == 0
    assert assemble(host2, omap, want)[3][-1] == 1


def test_corrupt_offsets_are_flagged_and_never_written_past_the_buffers(multihot):
    host, omap, want = multihot
    t = next(k for k, b in enumerate(omap.table_offsets) if b >= 0)
    offs = host.offs.copy()
    offs[omap.table_offsets[t] + omap.rows] = omap.table_capacity[t] + 5  # count too big
    host2 = SimpleNamespace(f32=host.f32, i64=host.i64, offs=offs)
    _, ids, _, status = assemble(host2, omap)
    assert status[-1] == 1 and status[t] == omap.table_capacity[t] + 5
