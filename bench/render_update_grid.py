"""The fused embedding update's grid against co-runners (bench/update_grid_probe.py):
one table per run and batch, a row per grid (blocks per SM), the update's time alone and
each co-runner's stretch of the step at each release stage, with its share of the
co-runner's time alone.

    python bench/render_update_grid.py [RAW.json ...] [-o OUT.md]

By default: bench/results/update_grid_h200.md from the run of 2026-11-30.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import render_main  # noqa: E402
from spec.serde import read_stored_text  # noqa: E402

RAW = [ROOT / "bench/results/raw/update_grid_run1.json"]


def cell(stretch_ms: float, alone_ms: float) -> str:
    share = f" ({100 * stretch_ms / alone_ms:.0f}%)" if alone_ms > 0 else ""
    return f"{stretch_ms:+.3f}{share}"


def batch_table(batch: dict) -> list[str]:
    kernels = batch["kernels"]
    stages = list(next(iter(batch["by_cap"][0]["kernels"].values())))
    head = ["update grid", "emb_bwd alone ms", "step ms"] + [
        f"{k} at {st}" for k in kernels for st in stages]
    out = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for row in batch["by_cap"]:
        grid = "one thread per (bag, column)" if row["blocks_per_sm"] == 0 else \
            f"{row['blocks_per_sm']} an SM ({row['max_blocks']} blocks)"
        cells = [grid, f"{row['plain']['stage_ms']['emb_bwd']:.3f}",
                 f"{row['plain']['span_ms']:.3f}"]
        cells += [cell(row["kernels"][k][st]["stretch_ms"], kernels[k]["alone_ms"])
                  for k in kernels for st in stages]
        out.append("| " + " | ".join(cells) + " |")
    return out


def render(raw: list[Path]) -> str:
    lines = ["# The fused embedding update's grid, and what hides beside it (H200)", "",
             "Made by `python bench/render_update_grid.py` from "
             + ", ".join(f"`{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}`"
                         for p in raw) + ". Each step is enqueued behind a GPU spin "
             "(events time the GPU alone); medians of the probe's steps. A co-runner's "
             "stretch is the step's span (to the later of its end and the kernel's) less "
             "the plain step's at the same grid; in brackets, its share of the co-runner's "
             "time alone.", ""]
    for path in raw:
        run = json.loads(read_stored_text(path))
        for batch in run["batches"]:
            alone = ", ".join(f"{k} {v['alone_ms']:.3f} ms ({v['blocks']} blocks)"
                              for k, v in batch["kernels"].items())
            lines += [f"## {path.name}, batch {batch['batch']}", "",
                      f"`{run['command']}` at commit {run.get('commit') or 'unknown'}; "
                      f"co-runners alone: {alone}; alu's output checked: "
                      f"{batch.get('output_matches_reference')}.", "",
                      *batch_table(batch), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, ROOT / "bench/results/update_grid_h200.md",
                       "update_grid_probe.py's JSON", render)


if __name__ == "__main__":
    sys.exit(main())
