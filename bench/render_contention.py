"""Tables of bench/contention_probe.py runs: each co-runner's time alone and what it
added to the training step released at each stage (the stretch, and its share of the
co-runner's time alone).

    python bench/render_contention.py [RAW.json ...] [-o OUT.md]

bench/results/contention_h200.md is this over the runs HEADER names (the default).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import render_main  # noqa: E402
from reports.summary import markdown_table  # noqa: E402
from spec.serde import read_stored_text  # noqa: E402

RAW_DIR = ROOT / "bench/results/raw"
RAW = [RAW_DIR / f"contention_{n}.json" for n in ("probe_run1", "ab_old_run1", "ab_new_run1")]
OUT = ROOT / "bench/results/contention_h200.md"
HEADER = """# What the heavy kernel contends for beside training, on the H200

heavy-fused trained on heavy's batches, one H200; each co-runner released on the
preprocessing stream at the opening of one training stage, the training stream above it
(as `corun profile` runs pairs); every step enqueued behind a GPU spin, so the times are
the GPU's. The co-runners (bench/contention_probe.py): `fused`, the pipeline's
whole-pipeline kernel at gpu-overlap's launch; `alu`, sigrid_hash chained in registers
(arithmetic, one int64 written a thread) and `alu-thin` the same on one block per SM;
`stream`, the fused kernel's bytes (raw ids read, two ids written for each) in passes
until it takes the fused kernel's time; `stream1`, one pass. Stretch: the step's span
(first stage's opening to the later of its end and the kernel's) less the plain step's,
medians of 12 steps; in brackets, its share of the co-runner's time alone.

- contention_probe_run1.json: `python bench/contention_probe.py --out $OUT --batches
  16384,8192 --reps 12` at commit 2846c50 (the file says aa3e82a: the device's git was
  not this tree's)
- contention_ab_old_run1.json, contention_ab_new_run1.json: `bash
  bench/kernel_ab_session.sh` at commit f0a0301, one command: the probe with the kernels
  as before (aa3e82a's backend/codegen.py and backend/scalar.py swapped in) and as now
  (slot constants read once per slot, ngram's index in 32 bits)

Rendered by `python bench/render_contention.py` over those files, in this order.
"""


def batch_table(batch: dict) -> str:
    stages = list(next(iter(batch["kernels"].values()))["by_release"])
    rows = []
    for name, k in batch["kernels"].items():
        alone = k["alone_ms"]
        cells = []
        for st in stages:
            s = k["by_release"][st]["stretch_ms"]
            cells.append(f"{s:+.3f} ({s / alone:.0%})" if alone > 0 else f"{s:+.3f}")
        rows.append([name, f"{alone:.3f}"] + cells)
    return markdown_table(["co-runner", "alone ms"] + [f"at {s}" for s in stages], rows)


def render(paths: list[Path]) -> str:
    lines = [HEADER] if paths == RAW else [
        "# bench/contention_probe.py runs", "",
        "Rendered by `python bench/render_contention.py " + " ".join(map(str, paths)) + "`.", ""]
    for path in paths:
        doc = json.loads(read_stored_text(path))
        for batch in doc["batches"]:
            plain = batch["plain"]
            lines += [f"## {path.name}, batch {batch['batch']}", "",
                      f"`{doc['command']}`; plain step {plain['span_ms']:.3f} ms "
                      f"(emb_fwd {plain['stage_ms']['emb_fwd']:.3f}, interaction_bwd "
                      f"{plain['stage_ms']['interaction_bwd']:.3f}, emb_bwd "
                      f"{plain['stage_ms']['emb_bwd']:.3f})", "", batch_table(batch), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, OUT, "an existing contention_*.json of "
                       "bench/contention_probe.py", render)


if __name__ == "__main__":
    sys.exit(main())
