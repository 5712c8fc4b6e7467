"""Tables of bench/contention_probe.py runs: each co-runner's time alone and what it
added to the training step released at each stage (the stretch, and its share of the
co-runner's time alone).

    python bench/render_contention.py [RAW.json ...] [-o OUT.md]

bench/results/contention_h200.md is this over the runs HEADER names (the default), with
the hardware counters of COUNTERS.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import render_main  # noqa: E402
from reports.summary import markdown_table  # noqa: E402
from spec.serde import read_stored_text  # noqa: E402

RAW_DIR = ROOT / "bench/results/raw"
RAW = [RAW_DIR / f"contention_{n}.json"
       for n in ("probe_run1", "ab_old_run1", "ab_new_run1", "caps_run1")]
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
- contention_caps_run1.json: `python bench/contention_probe.py --out $OUT --batches
  16384,8192 --reps 12 --register-caps 32,40` at commit 86ea9ad: `fused-r32` and
  `fused-r40`, the fused kernel compiled with at most 32 and 40 registers a thread (56
  uncapped; 8 and 6 blocks of 256 threads fit an SM instead of 4)

Rendered by `python bench/render_contention.py` over those files, in this order.
"""


COUNTERS = ("ncu_heavy_b16384_new.csv", "ncu_heavy_b16384_old.csv")
"""`PART=ncu bash bench/kernel_ab_session.sh` at commit 5393c7d: each kernel launched once
alone (bench/contention_probe.py --launch-once 417,5) under Nsight Compute, new kernels
then old."""
METRICS = (("Duration", "us", 1e-3), ("Compute (SM) Throughput", "SM %", 1),
           ("Issue Slots Busy", "issue %", 1), ("Executed Ipc Active", "IPC", 1),
           ("DRAM Throughput", "DRAM %", 1), ("L1/TEX Cache Throughput", "L1 %", 1),
           ("L2 Cache Throughput", "L2 %", 1), ("Memory Throughput", "GB/s", 1e-9),
           ("Mem Pipes Busy", "mem pipes %", 1), ("Theoretical Occupancy", "occ. max %", 1),
           ("Achieved Occupancy", "occ. %", 1))
"""(ncu metric, column, scale): "Memory Throughput" is the byte/s row, not the % one."""


def counters(path: Path) -> dict[str, dict[str, float]]:
    """Kernel (its short name) -> metric -> value, from an ncu `--csv --page details`
    file (its first lines are ncu's own messages)."""
    lines = read_stored_text(path).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(lines[start:]):
        name = row["Kernel Name"].split("[")[0].split("::")[-1]
        name = "fused" if name.startswith("corun_values") else name.replace("_kernel", "")
        unit = row["Metric Unit"]
        if row["Metric Name"] == "Memory Throughput" and unit != "byte/s":
            continue
        try:
            out.setdefault(name, {})[row["Metric Name"]] = float(
                row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
    return out


def counters_table(paths: list[Path]) -> str:
    rows = []
    for path in paths:
        label = path.stem.rsplit("_", 1)[-1]
        for kernel, m in counters(path).items():
            rows.append([f"{kernel} ({label})"] + [
                f"{m[name] * scale:,.1f}" if name in m else "-"
                for name, _, scale in METRICS])
    return markdown_table(["kernel (code)"] + [col for _, col, _ in METRICS], rows)


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
    if paths == RAW:
        lines += ["## Hardware counters, each kernel alone (heavy, batch 16384)", "",
                  "`PART=ncu bash bench/kernel_ab_session.sh` at commit 5393c7d: the fused "
                  "kernel, `alu` (417 hashes a thread) and `stream` (5 passes) launched once "
                  "each under Nsight Compute (`--clock-control none`), the kernels as now "
                  "(new) and as before slot constants were read once (old). Files: "
                  + ", ".join(f"`bench/results/raw/{c}`" for c in COUNTERS) + ".", "",
                  counters_table([RAW_DIR / c for c in COUNTERS]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, OUT, "an existing contention_*.json of "
                       "bench/contention_probe.py", render)


if __name__ == "__main__":
    sys.exit(main())
