"""How fast the kernel that assembles and checks each batch (backend/device_assembly.py)
runs alone, at its grid and at wider ones, against a plain device copy of its bytes.

At heavy b16384 the assembly took 0.29 ms alone for about 345 MB, 1.2 TB/s where the
H200's memory moves 3-4 TB/s, and in execution it costs the step about its whole time
(bench/results/heavy_capped_h200.md). Its grid has a block row per table; until
2026-12-01 only rows / 256 blocks wide, so each table's ids were copied by a thread a
row whatever their number. This probe times the same launch with that row of blocks
`factor` times wider (the kernel strides over the ids; threads past the rows copy ids
only) and at today's grid (device_assembly.grid_for), with and without the check, and a
`torch` copy of the ids' bytes as the floor. Every variant's batch is compared with the
PyTorch Assembler's.

On the H200:  python bench/assembly_probe.py --out $OUT
Then:         python bench/assembly_probe.py --render RAW.json ... [-o OUT.md]
(GPU only: the pools live in CUDA memory; tests/test_device_assembly.py runs the
kernel at wider grids in the CUDA simulator.)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import spec  # noqa: E402
from backend.assembly import Assembler, output_map  # noqa: E402
from backend.data import synthetic_inputs  # noqa: E402
from backend.device_assembly import THREADS, DeviceAssembler, grid_for  # noqa: E402
from backend.fusion import FusedGroup  # noqa: E402
from backend.launch import BoundLaunch  # noqa: E402
from backend.runner import PipelineProgram  # noqa: E402
from bench.contention_probe import heavy_probe_parser, probe_record  # noqa: E402
from spec.serde import read_stored_text, stored_path, write_atomic  # noqa: E402

OUT_MD = ROOT / "bench/results/assembly_probe_h200.md"


def events_ms(fn, reps: int) -> float:
    """Median GPU milliseconds of `fn()` on the current stream."""
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def probe_batch(pipe_name: str, model_name: str, rows: int, factors: list[int],
                reps: int) -> dict:
    """One batch size: the fused pipeline run once, then every assembly variant timed."""
    model = replace(spec.model_preset(model_name), batch_per_gpu=rows)
    pipe = spec.pipeline_preset(pipe_name)
    device = torch.device("cuda")
    raw = synthetic_inputs(pipe, rows, np.random.default_rng(0))
    program = PipelineProgram(pipe, [FusedGroup(pipe, pipe.order, "all", 1056, 256)], raw)
    state = program.to_device()
    state.launch(0)
    torch.cuda.synchronize()
    omap = output_map(program.layout, pipe, model)
    labels = torch.zeros(rows, device=device)
    torch_asm = Assembler(omap, state.views)
    want = torch_asm.batch(torch_asm.offsets(), labels)
    refs = [(want.dense.clone(), want.ids.clone(), want.offsets.clone())]
    n_ids, tables = int(want.ids.numel()), len(omap.row_base)
    by_row = grid_for(omap, THREADS, 0)
    out = {"rows": rows, "tables": tables, "ids": n_ids, "grid": list(by_row),
           "grid_default": list(grid_for(omap)), "variants": []}
    # bytes the kernel must move: ids read from the pool and written (and the reference
    # read, checked), offsets written (and read), dense features read and written (and read)
    for check in (True, False):
        asm = DeviceAssembler(omap, state.pools, refs if check else [], device)
        base = asm.launches[0] if check else asm.plain_launch
        moved = (n_ids * 8 + (tables * rows + 1) * 8 + rows * len(omap.dense_bases) * 4) * (
            3 if check else 2)
        bx, by = by_row
        for f in [*factors, None]:  # None: today's grid
            width = bx * f if f else grid_for(omap)[0]
            launch = BoundLaunch(base.dispatcher, (width, by), THREADS, base.args)
            asm.status.zero_()
            asm.ids.zero_()
            asm.starts_launch(0)  # where each table's ids start, then the assembly
            launch(0)
            torch.cuda.synchronize()
            counts = asm.status[:-1].tolist()
            equal = bool(asm.status[-1].item() == 0 and torch.equal(asm.ids[:n_ids], want.ids)
                         and torch.equal(asm.offsets, want.offsets)
                         and torch.equal(asm.dense_bits, want.dense.view(torch.int32))
                         and sum(counts) == n_ids)
            ms = events_ms(lambda launch=launch, asm=asm: (asm.starts_launch(0), launch(0)),
                           reps)
            out["variants"].append({"check": check, "factor": f, "blocks": [width, by],
                                    "ms": ms, "bytes": moved, "tb_per_s": moved / ms / 1e9,
                                    "equal": equal})
    src = torch.empty(n_ids, dtype=torch.int64, device=device)
    dst = torch.empty_like(src)
    copy_ms = events_ms(lambda: dst.copy_(src), reps)
    out["copy"] = {"ms": copy_ms, "bytes": 2 * n_ids * 8,
                   "tb_per_s": 2 * n_ids * 8 / copy_ms / 1e9}
    return out


def render(records: list[tuple[str, dict]]) -> str:
    """Markdown of probe records, given as (raw file name, record)."""
    names = " ".join(f"bench/results/raw/{name}" for name, _ in records)
    lines = ["# The batch's assembly kernel alone, by grid width (H200)", "",
             f"Made by `python bench/assembly_probe.py --render {names}`."]
    for name, record in records:
        lines += render_record(record, name)
    return "\n".join(lines)


def render_record(record: dict, raw_name: str) -> list[str]:
    lines = ["", f"# {record['pipeline']} beside {record['model']} ({raw_name})", "",
             f"From `{record['command']}` at commit {record['commit'][:7] or '?'} "
             f"(median of "
             f"{record['reps']} launches each, CUDA events). `factor`: the grid's row of "
             "blocks that many times wider than rows / 256 (1: the grid before 2026-12-01, "
             "a thread a row; `default`: device_assembly.grid_for's). Bytes: "
             "what the kernel must read and write (ids, offsets, dense; the reference too "
             "when it checks). `copy`: `torch` copying the ids' bytes once, the floor.", ""]
    for b in record["batches"]:
        lines += [f"## batch {b['rows']}: {b['ids']:,} ids in {b['tables']} tables, grid "
                  f"{tuple(b['grid'])}", "",
                  "| check | factor | blocks | ms | MB | TB/s | same batch |",
                  "|---|---:|---|---:|---:|---:|---|"]
        for v in b["variants"]:
            lines.append(f"| {'yes' if v['check'] else 'no'} | {v['factor'] or 'default'} | "
                         f"{v['blocks'][0]} x {v['blocks'][1]} | {v['ms']:.3f} | "
                         f"{v['bytes'] / 1e6:.0f} | {v['tb_per_s']:.2f} | "
                         f"{'yes' if v['equal'] else 'NO'} |")
        c = b["copy"]
        lines += ["", f"copy of the ids: {c['ms']:.3f} ms for {c['bytes'] / 1e6:.0f} MB "
                  f"({c['tb_per_s']:.2f} TB/s).", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = heavy_probe_parser(__doc__, batch=False)
    ap.add_argument("--out", default=os.environ.get("OUT", "out/assembly_probe"))
    ap.add_argument("--batches", default="16384,8192")
    ap.add_argument("--factors", default="1,2,4,8,16")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--render", metavar="RAW", nargs="+", help="render probes' JSON instead")
    ap.add_argument("-o", "--output", default=str(OUT_MD), help="with --render")
    args = ap.parse_args(argv)
    if args.render:
        missing = [r for r in args.render if not stored_path(Path(r)).is_file()]
        if missing:
            ap.error(f"--render {missing[0]}: an existing assembly_probe.json of this probe")
        records = [(Path(r).name, json.loads(read_stored_text(Path(r)))) for r in args.render]
        write_atomic(Path(args.output), render(records))
        print(f"wrote {args.output}")
        return 0
    try:
        factors = [int(x) for x in args.factors.split(",")]
        batches = [int(x) for x in args.batches.split(",")]
    except ValueError:
        ap.error("--factors and --batches: comma-separated integers")
    if min(factors) < 1 or min(batches) < 1:
        ap.error("--factors and --batches: integers >= 1")
    if args.reps < 1:
        ap.error(f"--reps {args.reps}: an integer >= 1")
    if not torch.cuda.is_available():
        ap.error("a CUDA GPU is needed (the pools live in GPU memory); --render works anywhere")
    t0 = time.time()
    results = []
    for rows in batches:
        results.append(probe_batch(args.pipeline, args.model, rows, factors, args.reps))
        print(json.dumps(results[-1]), flush=True)
    record = {**probe_record("assembly_probe.py", argv, args, results, t0), "reps": args.reps}
    path = Path(args.out) / "assembly_probe.json"
    write_atomic(path, json.dumps(record, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
