"""The distributed step's collective stages as measured, for the check of the collective
model (costmodel/comm.py) against hardware.

Run: python bench/collective_stages.py RUNS... -o collective_stages-<machine>.json
RUNS are what `corun execute`, `corun tune` or the matrix wrote: a Measurement JSON, or
a list of records each holding one under "measurement" (plain, .gz or .xz). Only
several-GPU `ideal` runs count: no fused kernel shares the GPU with the collectives.
Each stage's time is the span between the trainer's stage marks on the GPU's stream
(CUDA events): the collective and the copies that reorder its data around it. Per
model, batch, GPU count and stage it keeps the median over runs of each run's 10th
percentile step (the steps least held back by the host thread) and of its median.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.spec.hardware import GPU_KINDS as HARDWARE_PRESETS
from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

STAGES = ("emb_a2a_fwd", "emb_a2a_bwd", "grad_allreduce")
"""The collective stages whose GPU work is the collective and its reorder copies (the
input all-to-all is timed with the host's per-rank split of the ids, costmodel/host.py)."""


def read_runs(path: Path) -> list[dict]:
    """The Measurement documents in one file."""
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "rt") as f:
        doc = json.load(f)
    records = doc if isinstance(doc, list) else [doc]
    return [r.get("measurement", r) for r in records if isinstance(r, dict)
            and isinstance(r.get("measurement", r), dict)]


def stage_rows(measurements: list[dict]) -> list[dict]:
    """One row per model, batch, GPU count and collective stage of the ideal runs."""
    spans: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    gpu_names = set()
    for m in measurements:
        if m.get("strategy") != "ideal" or m.get("gpu_count", 1) < 2:
            continue
        gpu_names.add(m.get("hardware", ""))
        for stage in STAGES:
            s = (m.get("stages") or {}).get(stage)
            if s:
                key = (m["model"], m["batch_per_gpu"], m["gpu_count"], stage)
                spans[key].append((s["p10_ms"], s["median_ms"]))
    return [{"kind": "stage", "model": k[0], "batch_per_gpu": k[1], "gpus": k[2],
             "stage": k[3], "runs": len(v),
             "p10_ms": statistics.median(p for p, _ in v),
             "median_ms": statistics.median(m for _, m in v)}
            for k, v in sorted(spans.items())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--hardware", required=True,
                    help="the preset of the machine the runs were made on (h200, h100, ...)")
    ap.add_argument("--note", default="", help="where the runs came from, kept in the file")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    if args.hardware not in HARDWARE_PRESETS:
        ap.error(f"--hardware = {args.hardware!r}: one of {', '.join(HARDWARE_PRESETS)}")
    missing = [str(p) for p in args.runs if not p.is_file()]
    if missing:
        ap.error(f"runs: no such file: {', '.join(missing)}")
    rows = stage_rows([m for p in args.runs for m in read_runs(p)])
    if not rows:
        ap.error("runs: no several-GPU ideal run with collective stages in them")
    doc = {"bench": "collective_stages", "git_commit": git_commit(),
           "hardware": args.hardware, "files": [p.name for p in args.runs],
           "note": args.note, "stages": rows}
    write_atomic(args.output, json.dumps(doc, indent=1))
    for r in rows:
        print(f"{r['gpus']} x {r['model']} b{r['batch_per_gpu']} {r['stage']}: "
              f"p10 {r['p10_ms']:.3f} ms, median {r['median_ms']:.3f} ms ({r['runs']} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
