"""How many SMs a fused kernel released early in the forward takes from the forward's
GEMMs: the planner's chosen plan with its kernel's block count changed, each run under
the profiler (bench/kernel_timeline.py), then, per block count, the forward's batched
GEMM in the steps where the fused kernel was running when it started.

A guess this checked (bench/results/kernel_timeline_h200.md, session 43): an SM that
holds one of the fused kernel's blocks takes none of the GEMM's, so the GEMM runs on the
SMs left free, at about ideal's time x 132 / (SMs free). Not so: beside 39 and 65 blocks
it took 1.2x and 1.6x (the guess: 1.4x and 2x), beside 195 and 273 blocks (every SM
holding one) 1.7x and 3.4x, and beside 143 about 14x in the steps it was slow in.

    python bench/hold_blocks.py make PLAN_DIR --blocks 132,40,66,99,198,264 --out DIR
    python bench/kernel_timeline.py DIR --strategies ideal,corun,corun-2,... --out DIR/t
    python bench/hold_blocks.py report DIR/t --strategies ideal,corun,... [--kernel NAME]

`make` writes DIR/plan.json (the first block count) and DIR/plan-<N>.json (the others,
N = 2, 3, ...) with DIR/blocks.json naming which is which; `report` prints a markdown
table and writes it to DIR/t/hold.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spec.serde import stored_path  # noqa: E402

FUSED = "corun_values"
"""The fused kernels' values pass (the long one; Numba names it after the plan's kernel)."""

GEMM = "tn_n_tilesize32x32x8"
"""The interaction's batched GEMM (16,384 blocks of 64 threads at b16384): the forward
kernel the hold stretches most."""


def make(folder: Path, blocks: list[int], out: Path) -> None:
    """The plan of `folder` once per block count (every kernel of it launched so); a
    count the plan's pipeline does not allow is an error naming the field."""
    from corun.workload import resolve_pipeline
    from spec import Plan
    from spec.serde import loads

    plan = json.loads((folder / "plan.json").read_text())
    pipeline = resolve_pipeline(plan["pipeline"])
    out.mkdir(parents=True, exist_ok=True)
    names = {}
    for i, b in enumerate(blocks):
        variant = dict(plan, kernels=[dict(k, blocks=b) for k in plan["kernels"]])
        loads(Plan, variant, f"--blocks {b}").check_pipeline(pipeline)
        name = "plan.json" if i == 0 else f"plan-{i + 1}.json"
        (out / name).write_text(json.dumps(variant, indent=1))
        names["corun" if i == 0 else f"corun-{i + 1}"] = b
    (out / "blocks.json").write_text(json.dumps(names, indent=1))
    print(" ".join(f"{s}={b}" for s, b in names.items()))


def median_text(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f}" if xs else "-"


def span_text(xs: list[float]) -> str:
    return f"{min(xs):.0f}-{max(xs):.0f}" if xs else "-"


def overlaps(a: dict, b: dict) -> bool:
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]


def report(traces: Path, strategies: list[str], kernel: str, blocks: dict) -> str:
    """Per strategy: the fused kernels' grid, and the named training kernel's median time
    in steps where a fused values kernel was running beside it and in the rest, and how
    many of its runs took over twice ideal's median."""
    from bench.kernel_timeline import kernels, training_stream

    lines = [f"# The forward's `{kernel}` GEMM beside a fused kernel, by its block count",
             "", f"Traces in `{traces}`. beside: the GEMM's runs that a fused values kernel "
             "overlapped; slow: runs over twice ideal's median; head start: how long the "
             "values kernel had run when a GEMM beside it started (min-max); times in us.",
             "", "| strategy | blocks (plan) | values grid | GEMMs | beside | slow | beside "
             "median | alone median | values median | head start, slow | head start, not "
             "slow |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base = None
    for s in strategies:
        ks = kernels(traces / f"{s}.trace.json")
        train = training_stream(ks)
        values = [k for k in ks if k["stream"] != train and FUSED in k["name"]]
        gemms = [k for k in ks if k["stream"] == train and kernel in k["name"]]
        beside = [next((v for v in values if overlaps(g, v)), None) for g in gemms]
        held = [g["dur"] for g, v in zip(gemms, beside) if v]
        free = [g["dur"] for g, v in zip(gemms, beside) if not v]
        grids = sorted({tuple(v["grid"] or ()) for v in values})
        base = base or statistics.median(g["dur"] for g in gemms)
        slow = sum(g["dur"] > 2 * base for g in gemms)
        heads = {True: [], False: []}
        for g, v in zip(gemms, beside):
            if v:
                heads[g["dur"] > 2 * base].append(g["ts"] - v["ts"])
        cells = [s, blocks.get(s, "-"), " ".join(str(g[0]) for g in grids) or "-",
                 len(gemms), len(held), slow, median_text(held), median_text(free),
                 median_text([v["dur"] for v in values]), span_text(heads[True]),
                 span_text(heads[False])]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("folder", type=Path)
    m.add_argument("--blocks", required=True, help="comma-separated block counts")
    m.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("report")
    r.add_argument("traces", type=Path)
    r.add_argument("--strategies", required=True)
    r.add_argument("--kernel", default=GEMM)
    args = ap.parse_args(argv)
    from spec.errors import SpecError

    if args.command == "make":
        try:
            blocks = [int(b) for b in args.blocks.split(",")]
        except ValueError:
            blocks = []
        if not blocks or min(blocks) < 1:
            ap.error(f"--blocks {args.blocks!r}: comma-separated integers >= 1")
        try:
            make(args.folder, blocks, args.out)
        except SpecError as e:
            ap.error(str(e))
        return 0
    names = args.strategies.split(",")
    missing = [s for s in names if not stored_path(args.traces / f"{s}.trace.json").is_file()]
    if missing:
        ap.error(f"--strategies: no {missing[0]}.trace.json(.xz) in {args.traces}")
    table_file = args.traces.parent / "blocks.json"
    blocks = json.loads(table_file.read_text()) if table_file.is_file() else {}
    text = report(args.traces, names, args.kernel, blocks)
    (args.traces / "hold.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
