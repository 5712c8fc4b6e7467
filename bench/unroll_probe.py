"""A fused values kernel alone, its list elements computed 1, 2 or 4 a thread side by
side (FusedGroup.unroll), at several launch widths: does independent work per thread make
a narrow kernel faster? Beside the heavy case's embedding update a kernel gets only the
SM slots the update leaves (1.5 blocks an SM at 198 blocks), where alone the whole heavy
pipeline takes 1.06 ms at 195 blocks against 0.56 at 1,053 (profile rows of
costmodel/data/h200): latency, not throughput, bounds it there.

    python bench/unroll_probe.py --out $OUT [--pipelines heavy-small,heavy-short]
        [--rows 16384] [--blocks 132,198,264,396,1056] [--unrolls 1,2,4]
    python bench/unroll_probe.py --dry-run --out /tmp/x     # the CUDA simulator, tiny
    python bench/unroll_probe.py --render RAW.json [-o REPORT.md]

Each (pipeline, unroll, blocks) is the whole pipeline in one kernel over `rows` rows of
synthetic inputs; its outputs must equal unroll 1's at the same width (unroll 1 is the
kernel the tests compare with the NumPy reference); the values kernel is timed alone with
CUDA events, the median of --reps launches after 3 warm ones. Writes unroll_probe.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if "--dry-run" in sys.argv:  # before Numba loads: the CUDA simulator
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import spec  # noqa: E402
from backend.columns import equal  # noqa: E402
from backend.data import synthetic_inputs  # noqa: E402
from backend.fusion import FusedGroup  # noqa: E402
from backend.runner import PipelineProgram  # noqa: E402
from bench.render_execute import publish  # noqa: E402
from spec.serde import read_stored_text, write_atomic  # noqa: E402


def values_ms(dev, reps: int) -> float:
    """Median time of the program's one values kernel, launched alone `reps` times."""
    import torch

    launch = dev.bound(0, "values")
    for _ in range(3):
        launch(0)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        launch(0)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def run(pipelines: list[str], rows: int, blocks: list[int], unrolls: list[int],
        reps: int, dry: bool) -> list[dict]:
    records = []
    for name in pipelines:
        p = spec.pipeline_preset(name)
        inputs = synthetic_inputs(p, rows, np.random.default_rng(0))
        for width in blocks:
            base = None
            for u in unrolls:
                g = FusedGroup(p, p.order, "all", width, 256, unroll=u)
                prog = PipelineProgram(p, [g], inputs)
                if dry:
                    out, ms, regs = prog.run_cuda_simulated(), float("nan"), None
                else:
                    import torch

                    dev = prog.to_device()
                    dev.run()
                    torch.cuda.synchronize()
                    out = dev.outputs()
                    ms, regs = values_ms(dev, reps), g.registers_per_thread()
                base = base or out
                same = all(equal(base[k], out[k])[0] for k in base)
                records.append({"pipeline": name, "rows": rows, "blocks": g.grid("values"),
                                "asked_blocks": width, "unroll": u, "values_ms": ms,
                                "registers": regs, "equal_to_unroll_1": same})
                print(json.dumps(records[-1]), flush=True)
    return records


def render(records: list[dict], source: str) -> str:
    lines = [f"Alone times of the whole pipeline's values kernel (`{source}`): median ms of "
             "the launches; x: unroll 1's time over this one's at the same width.", "",
             "| pipeline | rows | blocks | unroll | registers | values ms | x | outputs |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    first = {(r["pipeline"], r["rows"], r["blocks"]): r["values_ms"] for r in records
             if r["unroll"] == 1}
    for r in records:
        one = first.get((r["pipeline"], r["rows"], r["blocks"]))
        speed = f"{one / r['values_ms']:.2f}" if one and r["values_ms"] == r["values_ms"] else "-"
        lines.append(f"| {r['pipeline']} | {r['rows']:,} | {r['blocks']} | {r['unroll']} | "
                     f"{r['registers'] or '-'} | {r['values_ms']:.3f} | {speed} | "
                     f"{'equal' if r['equal_to_unroll_1'] else 'DIFFER'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--pipelines", default="heavy-small,heavy-short")
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--blocks", default="132,198,264,396,1056")
    ap.add_argument("--unrolls", default="1,2,4")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--render", metavar="RAW")
    ap.add_argument("-o", dest="report")
    args = ap.parse_args(argv)
    if args.render:
        if not Path(args.render).exists():
            ap.error(f"--render {args.render}: no such file (an unroll_probe.json record)")
        text = render(json.loads(read_stored_text(Path(args.render))), args.render)
        report = Path(args.report) if args.report else None
        publish(text, report, named=True, default_out=report)
        return 0
    if not args.out:
        ap.error("--out DIR is needed to run (or --render RAW)")
    ints = {}
    for opt in ("blocks", "unrolls"):
        try:
            ints[opt] = [int(x) for x in getattr(args, opt).split(",")]
        except ValueError:
            ap.error(f"--{opt} {getattr(args, opt)}: comma-separated integers")
    if not all(1 <= u <= 8 for u in ints["unrolls"]) or 1 not in ints["unrolls"]:
        ap.error(f"--unrolls {args.unrolls}: integers in 1..8, 1 among them (the baseline)")
    if not all(b >= 1 for b in ints["blocks"]):
        ap.error(f"--blocks {args.blocks}: integers >= 1")
    unrolls = sorted(set(ints["unrolls"]))
    rows = 64 if args.dry_run else args.rows
    records = run(args.pipelines.split(","), rows, ints["blocks"], unrolls, args.reps,
                  args.dry_run)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "unroll_probe.json", json.dumps(records, indent=1))
    print(render(records, "unroll_probe.json"))
    return 0 if all(r["equal_to_unroll_1"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
