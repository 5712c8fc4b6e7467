"""Operators and fused pipelines on the GPU against CPU baselines, checked, then timed.

One command on the H200 (see README):
  python bench/ops_gpu.py -o ops.json
Writes every record to that JSON as it goes, and prints a summary. Locally,
`NUMBA_ENABLE_CUDASIM=1 python bench/ops_gpu.py --dry-run -o /tmp/ops.json` runs the same
steps tiny under the CUDA simulator.

Method: the copy ceiling (device-to-device, bytes read + written) is measured first in
the same run. Every kernel's output is compared with the NumPy reference before it is
timed. GPU times are CUDA events around each run of a program (all of its launches),
after warm-up, median over repetitions, on random inputs. Bytes are the minimum a
program must move (`needed_bytes`): raw inputs read once (offsets, validity, and of a
list's values only the leading ones its outputs are computed from), outputs written
once (values, offsets).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.backend import scalar  # noqa: E402
from corun.backend.chains import chains_of  # noqa: E402
from corun.backend.codegen import MAX_UNROLL  # noqa: E402
from corun.backend.columns import ColumnData, equal, take_rows  # noqa: E402
from corun.backend.data import synthetic_inputs  # noqa: E402
from corun.backend.fusion import SHORT_LANES, FusedGroup  # noqa: E402
from corun.backend.reference import sigrid_hash_ref  # noqa: E402
from corun.backend.runner import PipelineProgram, run_numpy  # noqa: E402
from corun.spec import (  # noqa: E402
    Column,
    DType,
    OpKind,
    OpNode,
    Pipeline,
    Shape,
    SparseOutput,
    pipeline_preset,  # noqa: E402
)
from corun.spec.pipelines import PIPELINE_PRESETS  # noqa: E402
from corun.spec.serde import write_atomic  # noqa: E402
from numba import cuda, uint64  # noqa: E402

PIPELINES = ["kaggle", "terabyte", "wide-2x", "wide-4x", "multihot"]
ROW_CAP = {"multihot": 2_097_152, **{name: 262_144 for name in PIPELINE_PRESETS
                                     if name.startswith("heavy")}}
"""Rows at most per pipeline (the heavy ones: up to 2,600 ids a row after ngram and
firstx; heavy-rehash at 4,194,304 rows ran out of an H100's memory)."""
LAUNCH: dict[str, int] = {}
"""Launch shape for every group but the launch-shape sweep; tiny under the simulator."""


def single_op(op: OpKind, params: dict, mean_length: float = 1.0) -> Pipeline:
    """A one-node pipeline over a non-null column (fill_null reads a nullable one)."""
    floaty = op in (OpKind.LOGIT, OpKind.BOXCOX, OpKind.CLAMP, OpKind.BUCKETIZE, OpKind.CAST)
    if floaty:
        col = Column("x", DType.FLOAT32, Shape.SCALAR, nullable=False)
    else:
        col = Column("x", DType.INT64, Shape.LIST, nullable=op is OpKind.FILL_NULL,
                     mean_length=mean_length)
    node = OpNode("n", op, "x", params)
    from corun.spec.pipeline import output_column

    out = output_column(op, params, col, "n", "n")
    dense = ("n",) if out.dtype is DType.FLOAT32 else ()
    sparse = () if dense else (SparseOutput("n", "t"),)
    return Pipeline(f"op-{op.value}", (col,), (node,), dense, sparse)


OPS = [
    (OpKind.FILL_NULL, {"value": 0}, 1.0),
    (OpKind.CAST, {"to": "int64"}, 1.0),
    (OpKind.SIGRID_HASH, {"salt": 0, "max_value": 10131227}, 1.0),
    (OpKind.BUCKETIZE, {"borders": [0.5, 1.0, 1.5, 4.0, 16.0, 64.0]}, 1.0),
    (OpKind.LOGIT, {"eps": 1e-5}, 1.0),
    (OpKind.BOXCOX, {"lambda": 1e-5}, 1.0),
    (OpKind.CLAMP, {"lo": 0.0, "hi": 16.0}, 1.0),
    (OpKind.CLAMP_LIST, {"lo": 0, "hi": 16}, 1.0),
    (OpKind.FIRSTX, {"x": 2}, 3.0),
    (OpKind.ONEHOT, {"low": 0, "high": 16, "num_classes": 5}, 1.0),
    (OpKind.NGRAM, {"n": 3}, 5.0),
    (OpKind.MAPID, {"map": list(range(1000, 1100))}, 1.0),
]


BYTES_RULE = "needed"
"""How a record's bytes are counted (the env record says): "needed", list values only as
far as the outputs read them (`needed_bytes`); files without it counted every input value."""


def nbytes(cols: dict[str, ColumnData], names) -> int:
    total = 0
    for n in names:
        c = cols[n]
        total += c.values.nbytes
        total += 0 if c.offsets is None else c.offsets.nbytes
        total += 0 if c.valid is None else c.rows
    return total


def _ngram_source_needed(needed: np.ndarray, n: int, lengths: np.ndarray) -> np.ndarray:
    """Leading source elements that ngram(n)'s first `needed` outputs are built from: the
    last needed output is offset o of window i (windows of m = min(n, length) starting at
    0, 1, ...); every window before i is whole."""
    m = np.maximum(np.minimum(n, lengths), 1)
    last = np.maximum(needed - 1, 0)
    i, o = last // m, last % m
    reach = np.where(i == 0, o, i + np.maximum(o, m - 2))
    return np.where(needed > 0, np.minimum(lengths, reach + 1), 0)


def list_values_needed(p: Pipeline, inp: dict[str, ColumnData]) -> dict[str, np.ndarray]:
    """Per list input column, the leading values of each row that some output is computed
    from (firstx keeps a prefix; ngram's windows need a prefix of their source; onehot
    reads the first value; a null row that fill_null replaces needs none), found back
    from each chain's output lengths (shared/OPS.md's semantics)."""
    needed: dict[str, np.ndarray] = {}
    for chain in chains_of(p, p.order):
        col = inp[chain.source]
        if col.offsets is None:
            continue
        lengths = np.diff(col.offsets).astype(np.int64)
        null = np.zeros(len(lengths), bool) if col.valid is None else ~col.valid.astype(bool)
        steps = []
        for node in chain.nodes:
            steps.append((node, lengths))
            if node.op is OpKind.FILL_NULL:
                lengths = np.where(null, 1, lengths)
            elif node.op is OpKind.FIRSTX:
                lengths = np.minimum(lengths, max(node.params["x"], 0))
            elif node.op is OpKind.NGRAM:
                m = np.minimum(node.params["n"], lengths)
                lengths = np.where(lengths > 0, (lengths - m + 1) * m, 0)
            elif node.op is OpKind.ONEHOT:
                lengths = np.full_like(lengths, node.params["num_classes"])
        need = lengths
        for node, before in reversed(steps):
            if node.op is OpKind.NGRAM:
                need = _ngram_source_needed(need, node.params["n"], before)
            elif node.op is OpKind.ONEHOT:  # reads its list's first element
                need = np.minimum(need, np.minimum(before, 1))
            elif node.op is OpKind.FILL_NULL:
                need = np.where(null, 0, need)
        prior = needed.get(chain.source)
        needed[chain.source] = need if prior is None else np.maximum(prior, need)
    return needed


def needed_bytes(p: Pipeline, inp: dict[str, ColumnData], out: dict[str, ColumnData],
                 outputs) -> int:
    """Bytes a program over `p` must move: every input's offsets and validity, its values
    as far as `list_values_needed` (a column no chain reads as a list: all of them),
    and the `outputs` written once."""
    needed = list_values_needed(p, inp)
    total = nbytes(out, outputs)
    for c in p.inputs:
        col = inp[c.name]
        total += nbytes(inp, [c.name])
        if c.name in needed:
            total -= col.values.nbytes - int(needed[c.name].sum()) * col.values.itemsize
    return total


class Bench:
    def __init__(self, out: Path, dry: bool, reps: int) -> None:
        self.out, self.dry, self.reps = out, dry, reps
        self.records: list[dict] = []
        self.rng = np.random.default_rng(2026)

    def save(self, rec: dict) -> None:
        rec["t_s"] = round(time.time() - T0, 1)
        self.records.append(rec)
        print(json.dumps(rec), flush=True)
        write_atomic(self.out, json.dumps(self.records, indent=1))

    def run_gpu(self, prog: PipelineProgram, breakdown: bool = False
                ) -> tuple[dict[str, ColumnData], dict]:
        """Outputs of one run, then timings: `ms` from events around each run (host launch
        gaps included, as a Python host sees it) and `device_ms` from runs queued behind
        a GPU spin so that the events see device time only."""
        if self.dry:
            out = prog.run_cuda_simulated()
            launches = sum(g.launches("cuda") for g in prog.groups)
            return out, {"ms": float("nan"), "device_ms": float("nan"), "launches": launches}
        import torch

        dev = prog.to_device()
        dev.run()
        torch.cuda.synchronize()
        out = dev.outputs()
        for _ in range(3):
            dev.run()
        torch.cuda.synchronize()
        t = time.perf_counter()
        dev.run()
        host_ms = (time.perf_counter() - t) * 1e3
        torch.cuda.synchronize()
        times = []
        for _ in range(self.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dev.run()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        n = max(3, min(self.reps, int(200 / max(host_ms, 1e-3))))
        dev_times = []
        for _ in range(5):
            spin_ms = 2 * n * host_ms + 2
            torch.cuda._sleep(int(spin_ms * 1e-3 * 2.0e9))  # ~2 GHz SM clock
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t = time.perf_counter()
            a.record()
            for _ in range(n):
                dev.run()
            b.record()
            enqueue_ms = (time.perf_counter() - t) * 1e3
            b.synchronize()
            dev_times.append(a.elapsed_time(b) / n)
        torch.cuda.synchronize()
        # the last of many launches wrote what the first did (a kernel that keeps state
        # from launch to launch, as the one-pass kernel does, must leave it ready)
        repeat_bad = check(out, dev.outputs())
        timing = {"ms": statistics.median(times), "p10_ms": float(np.percentile(times, 10)),
                  "repeat_mismatches": repeat_bad[:10],
                  "p90_ms": float(np.percentile(times, 90)),
                  "device_ms": statistics.median(dev_times), "host_enqueue_ms": host_ms,
                  "device_runs": n, "spin_covered_enqueue": enqueue_ms < spin_ms,
                  "launches": dev.launches_per_batch()}
        if breakdown:
            steps: dict[str, list[float]] = {}
            for _ in range(self.reps):
                torch.cuda._sleep(int((host_ms + 2) * 1e-3 * 2.0e9))
                events = [(None, torch.cuda.Event(enable_timing=True))]
                events[0][1].record()  # after the spin: the first step starts here

                def mark(step, group, events=events):
                    e = torch.cuda.Event(enable_timing=True)
                    e.record()
                    events.append((step, e))

                dev.run(mark=mark)
                events[-1][1].synchronize()
                for (_, e0), (step, e1) in zip(events, events[1:]):
                    steps.setdefault(step, []).append(e0.elapsed_time(e1))
            timing["breakdown_ms"] = {k: statistics.median(v) for k, v in steps.items()}
        return out, timing


def copy_ceiling(b: Bench) -> float:
    if b.dry:
        return 4.3e12
    from corun.backend.ceilings import COPY_BYTES, copy_bytes_per_s

    bw = copy_bytes_per_s("cuda")
    b.save({"kind": "ceiling", "copy_bytes": 2 * COPY_BYTES, "ms": 2 * COPY_BYTES / bw * 1e3,
            "bytes_per_s": bw})
    return bw


def check(ref: dict[str, ColumnData], got: dict[str, ColumnData], rows=None) -> list[str]:
    bad = []
    for name, r in ref.items():
        if name not in got:
            continue
        g = got[name] if rows is None else take_rows(got[name], rows)
        ok, row = equal(r, g)
        if not ok:
            bad.append(f"{name}@{row}")
    return bad


def bench_ops(b: Bench, bw: float, check_rows: int, sizes: list[int]) -> None:
    for op, params, mean_len in OPS:
        p = single_op(op, params, mean_len)
        inp = synthetic_inputs(p, check_rows, b.rng, vary_lengths=True, zipf_a=0)
        if op in (OpKind.LOGIT,):  # logit's interesting range is (0, 1)
            inp["x"] = ColumnData(b.rng.random(check_rows).astype(np.float32))
        g = [FusedGroup(p, ["n"], "n", **LAUNCH)]
        out, _ = b.run_gpu(PipelineProgram(p, g, inp))
        bad = check(run_numpy(p, inp), out)
        b.save({"kind": "op-check", "op": op.value, "rows": check_rows, "mismatches": bad})
        for rows in sizes:
            inp = synthetic_inputs(p, rows, b.rng, vary_lengths=True, zipf_a=0)
            out, timing = b.run_gpu(PipelineProgram(p, g, inp))
            moved = needed_bytes(p, inp, out, ["n"])
            b.save({"kind": "op-time", "op": op.value, "rows": rows, "bytes": moved, **timing,
                    "bw_fraction": moved / (timing["device_ms"] * 1e-3) / bw})


def bench_pipelines(b: Bench, bw: float, check_rows: int, sizes: list[int],
                    sample: int, names: list[str], keep: list[str]) -> None:
    for name in names:
        p = pipeline_preset(name)
        cap = ROW_CAP.get(name)
        rows = min(check_rows, cap) if cap else check_rows
        inp = synthetic_inputs(p, rows, b.rng, zipf_a=0)
        pick = np.sort(b.rng.choice(rows, min(sample, rows), replace=False))
        sub = {k: take_rows(v, pick) for k, v in inp.items()}
        ref = run_numpy(p, sub)
        for warp in (False, True):  # both thread mappings (FusedKernel.warp_rows)
            group = FusedGroup(p, p.order, "all", warp_rows=warp, **LAUNCH)
            out, _ = b.run_gpu(PipelineProgram(p, [group], inp))
            bad = check(ref, out, pick)
            b.save({"kind": "pipeline-check", "pipeline": name, "warp_rows": warp,
                    "rows": rows, "checked_rows": len(pick), "outputs": len(out),
                    "mismatches": bad[:10]})
            del out
        del inp
        for rows in sizes:
            rows = min(rows, cap) if cap else rows
            inp = synthetic_inputs(p, rows, b.rng, zipf_a=0)
            variants = {label: [FusedGroup(p, p.order, "all", **variant_knobs(label),
                                           **LAUNCH)]
                        for label in keep if label != "unfused"}
            if "unfused" in keep:
                variants["unfused"] = [FusedGroup(p, [n], n, **LAUNCH) for n in p.order]
            if len(p.nodes) > 300 and rows > 1_000_000:
                # 442 materialised columns at 4M rows exhaust the host's memory: skip
                variants.pop("unfused", None)
            for label, groups in variants.items():
                steps = label in ("fused", "fused-scan", "fused-1pass", "fused-totals")
                out, timing = b.run_gpu(PipelineProgram(p, groups, inp), breakdown=steps)
                if label != "fused":  # checked like the default kernel: other rows
                    ref_rows = np.sort(b.rng.choice(rows, min(sample, rows), replace=False))
                    bad = check(run_numpy(p, {k: take_rows(v, ref_rows)
                                              for k, v in inp.items()}), out, ref_rows)
                    timing = {**timing, "mismatches": bad[:10]}
                outputs = list(p.dense_outputs) + [s.node for s in p.sparse_outputs]
                moved = needed_bytes(p, inp, out, outputs)
                regs = groups[0].registers_per_thread() if label != "unfused" else None
                b.save({"kind": "pipeline-time", "pipeline": name, "variant": label,
                        "rows": rows, "bytes": moved, **timing, "registers": regs,
                        "bw_fraction": moved / (timing["device_ms"] * 1e-3) / bw})


VARIANT_PARTS = {
    "scan": ("fixed_offsets", False),  # fixed-length lists' offsets by lengths and scan too
    "1pass": ("list_scan", "lookback"),  # lengths, scan and values in one launch
    "totals": ("list_scan", "tiles"),  # tile totals, their scan, then values by tile
    "thread": ("warp_rows", False),  # a thread per row, long lists too
    "mod": ("division", "mod"),  # sigrid_hash's floor-mod as a 64-bit %
    "src": ("source_first", True),  # an ngram's input elements computed once each
}
"""A variant label's parts after "fused": FusedGroup knobs set away from the default;
"tileN" (tiles of N rows), "rN" (registers capped at N a thread), "uN" (N list elements
a thread computes side by side) and "lanesN" (short lists' rows split over up to N
lanes) take a number."""


def variant_knobs(label: str) -> dict:
    """The FusedGroup knobs of a variant label ("fused", "fused-1pass",
    "fused-tile2048-r64", ...); an unknown label or part is an error naming it."""
    head, *parts = label.split("-")
    if head != "fused":
        raise SystemExit(f"--variants: {label!r} is not fused[-part...] or unfused")
    knobs: dict = {}
    for part in parts:
        if part in VARIANT_PARTS:
            knobs[VARIANT_PARTS[part][0]] = VARIANT_PARTS[part][1]
        elif part.startswith("tile") and part[4:].isdigit():
            knobs["tile_rows"] = int(part[4:])
        elif part.startswith("r") and part[1:].isdigit():
            knobs["max_registers"] = int(part[1:])
        elif part.startswith("u") and part[1:].isdigit():
            if not 1 <= int(part[1:]) <= MAX_UNROLL:
                raise SystemExit(f"--variants: {label!r}: unroll {part[1:]} is not in "
                                 f"1..{MAX_UNROLL}")
            knobs["unroll"] = int(part[1:])
        elif part.startswith("lanes") and part[5:].isdigit():
            if int(part[5:]) not in SHORT_LANES:
                raise SystemExit(f"--variants: {label!r}: lanes {part[5:]} is not one of "
                                 f"{', '.join(map(str, SHORT_LANES))}")
            knobs["short_lanes"] = int(part[5:])
        else:
            raise SystemExit(f"--variants: {label!r}: {part!r} is not one of "
                             f"{', '.join(VARIANT_PARTS)}, tileN, rN, uN, lanesN")
    return knobs


SHAPES = [(256, bl) for bl in (132, 528, 1056, 4224, 16896)] + [(128, 1056), (512, 1056)]
"""(threads a block, blocks) of the launch-shape sweep's default."""


def _blocks(text: str) -> int:
    """One --shape-blocks entry: a block count of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise SystemExit(f"--shape-blocks: {text!r} is not a block count (an integer >= 1)")
    return int(text)


def bench_launch_shapes(b: Bench, bw: float, rows: int, names: list[str],
                        variants: list[str], shapes: list[tuple[int, int]]) -> None:
    """Each pipeline's one group over `rows` (at most its ROW_CAP) in each variant at each
    launch shape (threads, blocks), checked against the NumPy reference on a sample of
    rows before it is timed."""
    for name in names:
        p = pipeline_preset(name)
        n = min(rows, ROW_CAP.get(name, rows))
        inp = synthetic_inputs(p, n, b.rng, zipf_a=0)
        pick = np.sort(b.rng.choice(n, min(2000, n), replace=False))
        ref = run_numpy(p, {k: take_rows(v, pick) for k, v in inp.items()})
        outputs = list(p.dense_outputs) + [s.node for s in p.sparse_outputs]
        for label in variants:
            for threads, blocks in shapes if not b.dry else [(32, 2)]:
                g = [FusedGroup(p, p.order, "all", blocks=blocks, threads_per_block=threads,
                                **variant_knobs(label))]
                out, timing = b.run_gpu(PipelineProgram(p, g, inp))
                moved = needed_bytes(p, inp, out, outputs)
                b.save({"kind": "launch-shape", "pipeline": name, "variant": label,
                        "rows": n, "blocks": blocks, "threads": threads, **timing,
                        "registers": g[0].registers_per_thread(),
                        "mismatches": check(ref, out, pick)[:10],
                        "bw_fraction": moved / (timing["device_ms"] * 1e-3) / bw})


HASH_CHAIN = 16
"""Hashes each thread applies in turn to one loaded id in the compute-bound kernels."""

HASH_SALT, HASH_MAX = 7, 10_131_227
"""The salt and table size the hash-rate kernels hash with (a Criteo table's)."""


@cuda.jit(device=True)
def _hash_halves(x, salt, max_value, magic, shift):
    """scalar.sigrid_hash_magic, step for step, with the multiply-high by 32-bit halves."""
    h = scalar.hash128to64(uint64(np.int64(salt)), scalar.twang_mix64(uint64(np.int64(x))))
    d = uint64(max_value)
    negative = np.int64(h) < 0
    n = ~h if negative else h
    t = scalar.umulhi64_halves(uint64(np.int64(magic)), n)
    q = uint64((t + ((n - t) >> uint64(1))) >> uint64(shift))
    r = uint64(n - uint64(q * d))
    return np.int64(d - uint64(1) - r) if negative else np.int64(r)


@cuda.jit(device=True)
def _hash_device(x, salt, max_value, magic, shift):
    """scalar.sigrid_hash_magic as the fused kernels compile it."""
    return scalar.sigrid_hash_magic(x, salt, max_value, magic, shift)


@cuda.jit
def _hash_ids(ids, out, times, halves, salt, max_value, magic, shift):
    """Each id hashed `times` times in turn (0: a copy), by `halves` or the device's
    multiply-high (the same for every thread: no warp runs both)."""
    for i in range(cuda.grid(1), ids.size, cuda.gridsize(1)):
        v = ids[i]
        for _ in range(times):
            v = _hash_halves(v, salt, max_value, magic, shift) if halves else \
                _hash_device(v, salt, max_value, magic, shift)
        out[i] = v


HASH_RUNS = [("copy", "-", 0), ("hash", "device", 1), ("hash", "halves", 1),
             (f"hash-x{HASH_CHAIN}", "device", HASH_CHAIN),
             (f"hash-x{HASH_CHAIN}", "halves", HASH_CHAIN)]
"""(kernel, multiply-high, hashes an id) the hash rate runs `_hash_ids` as: a copy, one
sigrid_hash an id, HASH_CHAIN in turn an id, with the multiply-high the fused kernels
compile ("device": scalar.umulhi64) or 32-bit halves; salt and table size passed at
launch, as the fused kernels' are."""


def bench_hash_rate(b: Bench, ids: int, blocks: list[int]) -> None:
    """sigrid_hash's rate on the GPU: ids hashed once each (memory-bound, beside a copy
    of the same ids) and HASH_CHAIN times each in turn (compute-bound: what a list
    pipeline's hashing costs when memory is not the limit), with each multiply-high
    (HASH_RUNS). Every kernel's outputs are compared with Python's sigrid_hash on a
    sample of ids first."""
    magic, shift = scalar.division_magic(HASH_MAX)
    host = b.rng.integers(-(2**63), 2**63 - 1, ids, dtype=np.int64)
    pick = np.sort(b.rng.choice(ids, min(2000, ids), replace=False))
    x, out = cuda.to_device(host), cuda.device_array(ids, np.int64)
    threads = 32 if b.dry else 256
    for name, mul, times in HASH_RUNS:
        args = (times, mul == "halves", HASH_SALT, HASH_MAX, magic, shift)
        want = host[pick]
        for _ in range(times):
            want = sigrid_hash_ref(want, HASH_SALT, HASH_MAX)
        for grid in [2] if b.dry else blocks:
            _hash_ids[grid, threads](x, out, *args)
            got = out.copy_to_host()[pick]
            bad = [f"id@{int(pick[i])}" for i in np.flatnonzero(got != want)[:10]]
            ms = float("nan")
            if not b.dry:
                start, end = cuda.event(), cuda.event()
                start.record()
                for _ in range(b.reps):
                    _hash_ids[grid, threads](x, out, *args)
                end.record()
                end.synchronize()
                ms = cuda.event_elapsed_time(start, end) / b.reps
            regs = None if b.dry else max(_hash_ids.get_regs_per_thread().values())
            b.save({"kind": "hash-rate", "kernel": name, "multiply_high": mul, "ids": ids,
                    "hashes": ids * times, "blocks": grid, "threads": threads, "device_ms": ms,
                    "registers": regs, "hashes_per_s": ids * times / (ms * 1e-3),
                    "bytes_per_s": 16 * ids / (ms * 1e-3), "mismatches": bad})


def bench_cpu(b: Bench, plan: list[tuple[str, int]]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import polars_pipelines as pp
    except ImportError:
        pp = None
    for name, rows in plan:
        p = pipeline_preset(name)
        inp = synthetic_inputs(p, rows, b.rng, zipf_a=0)
        t = time.perf_counter()
        ref = run_numpy(p, inp)
        b.save({"kind": "cpu", "pipeline": name, "rows": rows, "engine": "numpy-1core",
                "ms": (time.perf_counter() - t) * 1e3, "mismatches": []})
        prog = PipelineProgram(p, [FusedGroup(p, p.order, "all")], inp)
        out = prog.run_cpu()  # compiles
        times = []
        for _ in range(3):
            t = time.perf_counter()
            prog.run_cpu()
            times.append((time.perf_counter() - t) * 1e3)
        import numba

        b.save({"kind": "cpu", "pipeline": name, "rows": rows,
                "engine": f"numba-{numba.config.NUMBA_NUM_THREADS}threads",
                "ms": statistics.median(times), "mismatches": check(ref, out)})
        if pp is not None and pp.supports(p):
            import polars as pl

            df = pp.frame(p, inp)
            times = []
            for _ in range(3):
                t = time.perf_counter()
                res = pp.run(p, df)
                times.append((time.perf_counter() - t) * 1e3)
            bad = check(ref, pp.to_columns(res))
            b.save({"kind": "cpu", "pipeline": name, "rows": rows,
                    "engine": f"polars-{pl.__version__}-{pl.thread_pool_size()}threads",
                    "ms": statistics.median(times), "mismatches": bad})


T0 = time.time()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", type=Path, required=True, help="the JSON to write")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--only", default="ceiling,ops,pipelines,shapes,cpu",
                    help="sections to run, comma-separated: ceiling, ops, pipelines, shapes, "
                         "hash (sigrid_hash's rate, not in the default), cpu")
    ap.add_argument("--pipelines", default=",".join(PIPELINES))
    ap.add_argument("--variants", default="fused,fused-1pass,fused-totals,fused-mod,unfused",
                    help="comma-separated: unfused, or fused with any of -scan, -1pass, "
                         "-totals, -thread, -mod, -tileN (tiles of N rows), -rN (N registers a "
                         "thread at most), e.g. fused-totals-tile2048-r64")
    ap.add_argument("--check-rows", type=int, default=10_000_000)
    ap.add_argument("--shape-pipelines", default="kaggle",
                    help="pipelines of the launch-shape sweep (--only shapes)")
    ap.add_argument("--shape-variants", default="fused",
                    help="variants of the launch-shape sweep, as --variants")
    ap.add_argument("--shape-blocks", default="",
                    help="blocks of 256 threads the sweep launches, comma-separated "
                         "(default: 132 to 16,896 blocks, and 1,056 of 128 and of 512)")
    ap.add_argument("--shape-rows", type=int, default=4_194_304,
                    help="rows of the launch-shape sweep's batch, at most each pipeline's "
                         "row cap (default 4,194,304; a training batch: 4,096 to 32,768)")
    args = ap.parse_args(argv)
    for label in [*args.variants.split(","), *args.shape_variants.split(",")]:
        if label != "unfused":  # every label checked before any work
            variant_knobs(label)
    if args.shape_rows < 1:
        raise SystemExit(f"--shape-rows: {args.shape_rows} is not a row count (>= 1)")
    shapes = [(256, _blocks(x)) for x in args.shape_blocks.split(",")] \
        if args.shape_blocks else SHAPES
    dry = args.dry_run
    if dry:
        LAUNCH.update(blocks=2, threads_per_block=32)
    b = Bench(args.output, dry, reps=3 if dry else 30)
    info = {"kind": "env", "python": platform.python_version(), "cpus": os.cpu_count(),
            "argv": sys.argv, "bytes_rule": BYTES_RULE}
    if not dry:
        import numba
        import torch

        info.update(torch=torch.__version__, numba=numba.__version__,
                    gpu=torch.cuda.get_device_name(), numpy=np.__version__)
    b.save(info)
    only = set(args.only.split(","))
    check_rows = 2000 if dry else args.check_rows
    sizes = [300, 1000] if dry else [65_536, 4_194_304]
    bw = copy_ceiling(b) if "ceiling" in only else 4.3e12
    if "ops" in only:
        bench_ops(b, bw, check_rows, sizes)
    if "pipelines" in only:
        bench_pipelines(b, bw, 1000 if dry else check_rows, sizes[:1] if dry else sizes,
                        200 if dry else 200_000, args.pipelines.split(","),
                        args.variants.split(","))
    if "shapes" in only:
        bench_launch_shapes(b, bw, min(500, args.shape_rows) if dry else args.shape_rows,
                            args.shape_pipelines.split(","), args.shape_variants.split(","),
                            shapes)
    if "hash" in only:
        bench_hash_rate(b, 500 if dry else 1 << 26, [1056, 16896])
    if "cpu" in only:
        big = 500 if dry else 4_194_304
        small = 300 if dry else 65_536
        bench_cpu(b, [("kaggle", big), ("terabyte", big), ("kaggle", small),
                      ("wide-2x", small), ("wide-4x", small), ("multihot", small)])
    print(f"done in {time.time() - T0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
