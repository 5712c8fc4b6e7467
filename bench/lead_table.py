"""How a resident kernel's head start (its lead) changes what it costs a stage: from
`corun profile --resident [--lead-ms L]` CSVs, the stage's time beside the kernel over
its time alone, median per stage, kernel grid (blocks launched) and lead asked, for one
model and batch. The learned model is fitted on the 0.01 ms lead only
(costmodel/data/h200/README.md); a kernel released in an executed step is often on the
SMs longer before the next stage starts (bench/results/kernel_timeline_h200.md).

    python bench/lead_table.py CSV ... [--model heavy-lean] [--batch 16384]
        [--stages bottom_mlp_fwd,interaction_fwd,top_mlp_fwd] [--every]
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

COLUMNS = ("model", "batch", "stage", "blocks", "warp_rows", "stage_alone_ms",
           "stage_corun_ms", "kernel_lead_ms")
"""The columns read (lead_asked_ms too where a file has it)."""


def slowdowns(paths: list[Path], model: str, batch: int, stages: list[str]) -> dict:
    """{(stage, grid, warp_rows): {lead asked: [stage corun / alone, ...]}}; a row without a
    lead asked was profiled at the default lead, 0.01 ms."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path, newline="") as f:
            rows = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (rows.fieldnames or ())]
            if missing:
                raise ValueError(f"{path}: no column {missing[0]!r} (a `corun profile "
                                 "--resident` CSV has it)")
            for r in rows:
                if r["model"] != model or int(r["batch"]) != batch or r["stage"] not in stages:
                    continue
                if not r.get("kernel_lead_ms"):
                    continue  # a launched row: the stage's kernels enqueued first
                lead = float(r.get("lead_asked_ms") or 0.01)
                key = (r["stage"], int(r["blocks"]), r["warp_rows"])
                out[key][lead].append(float(r["stage_corun_ms"]) / float(r["stage_alone_ms"]))
    return out


def table(data: dict, stages: list[str], every: bool = False) -> str:
    """The markdown table: a row per stage and kernel (only those profiled at two or more
    leads unless `every`), a column per lead."""
    data = {k: v for k, v in data.items() if every or len(v) > 1}
    leads = sorted({lead for by_lead in data.values() for lead in by_lead})
    lines = ["| stage | grid | warp rows | " + " | ".join(f"lead {x:g} ms" for x in leads) + " |",
             "|---|---:|---:|" + "---:|" * len(leads)]
    for key in sorted(data, key=lambda k: (stages.index(k[0]), k[1], k[2])):
        cells = [f"{statistics.median(data[key][x]):.1f}x" if data[key].get(x) else "-"
                 for x in leads]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path, nargs="+")
    ap.add_argument("--model", default="heavy-lean")
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--stages", default="bottom_mlp_fwd,interaction_fwd,top_mlp_fwd")
    ap.add_argument("--every", action="store_true",
                    help="also the kernels profiled at one lead only")
    args = ap.parse_args(argv)
    missing = [p for p in args.csv if not p.is_file()]
    if missing:
        ap.error(f"csv: no file {missing[0]}")
    stages = args.stages.split(",")
    try:
        data = slowdowns(args.csv, args.model, args.batch, stages)
    except ValueError as e:
        ap.error(f"csv: {e}")
    if not data:
        ap.error(f"no resident rows of --model {args.model} at --batch {args.batch} for "
                 f"--stages {args.stages}")
    print(table(data, stages, args.every), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
