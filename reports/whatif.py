"""Tables and heatmaps of a what-if grid (from its points; nothing is simulated here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from corun.reports import figures

MAX_CORES = 8192
"""The most host cores the what-if's cpu:N search tries; a point no cpu:N up to it
matches records MAX_CORES + 1."""


def markdown(points, model: str, pipeline: str) -> str:
    lines = [f"# What-if: {model} / {pipeline}", "",
             "Planned throughput (corun's plan, simulated), as a share of ideal, and the "
             "smallest cpu:N that matches the plan.", "",
             "| hardware | interconnect | GPUs | batch/GPU | ideal samples/s "
             "| planned samples/s | of ideal | CPU cores to match | paced by | plan |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        cores = str(p.cpu_cores_to_match) if p.cpu_cores_to_match <= MAX_CORES else "none"
        lines.append(f"| {p.hardware} | {p.interconnect} | {p.gpus} | {p.batch} "
                     f"| {p.ideal_samples_per_s:,.0f} | {p.planned_samples_per_s:,.0f} "
                     f"| {100 * p.of_ideal:.1f}% | {cores} | {p.paced_by} | {p.plan}"
                     f"{'' if p.converged else ' *'} |")
    stages = list(dict.fromkeys(s.split("=")[0] for p in points for s in p.stage_ms.split()))
    lines += ["", "Ideal's step on GPU 0 (ms an iteration): each training stage alone, the "
              "collectives and the host thread's launches; the largest of GPU (the stages "
              "summed), link and host sets the pace.", "",
              "| hardware | GPUs | batch/GPU | " + " | ".join(stages)
              + " | GPU | link | host |",
              "|---|---|---|" + "---|" * (len(stages) + 3)]
    for p in points:
        ms = dict(s.split("=") for s in p.stage_ms.split())
        lines.append(f"| {p.hardware} | {p.gpus} | {p.batch} | "
                     + " | ".join(ms.get(s, "-") for s in stages)
                     + f" | {p.gpu_ms:.3f} | {p.link_ms:.3f} | {p.host_ms:.3f} |")
    if any(p.cpu_cores_to_match > MAX_CORES for p in points):
        lines += ["", f"none: no cpu:N up to {MAX_CORES} cores matches the plan. Where the "
                  "host thread that launches the step sets the pace, host workers slow it "
                  "(costmodel/host.py, WORKERS_MS) and more of them do not catch up."]
    if not all(p.converged for p in points):
        lines += ["", "*: the search stopped at its time limit before it converged, run "
                  "once more with a longer one (--time-limit per point, then four times it); "
                  "a longer limit may find a better plan."]
    if any(p.of_ideal > 1 for p in points):
        lines += ["", "Above 100%: ideal's batches are ready on each GPU row-wise, so their "
                  "ids still cross the input all-to-all; a plan's owner-mapped features are "
                  "preprocessed by their table's GPU over the global batch and skip it "
                  "(`corun plan` prints the all-to-all's time with and without them)."]
    return "\n".join(lines) + "\n"


def heatmaps(points, out: Path) -> list[Path]:
    """One figure per metric; one panel per hardware and interconnect; GPUs down, batch
    across."""
    import matplotlib.pyplot as plt

    kinds = list(dict.fromkeys((p.hardware, p.interconnect) for p in points))
    gpus = sorted({p.gpus for p in points})
    batches = sorted({p.batch for p in points})
    metrics = (("planned_samples_per_s", "planned samples/s", "{:,.0f}"),
               ("of_ideal", "% of ideal", "{:.1%}"),
               ("cpu_cores_to_match", "CPU cores for cpu:N to match", "{:d}"))
    paths = []
    for attr, title, fmt in metrics:
        fig, axes = plt.subplots(1, len(kinds), figsize=(4 * len(kinds), 3.4), squeeze=False)
        for ax, kind in zip(axes[0], kinds):
            grid = np.full((len(gpus), len(batches)), np.nan)
            converged = np.ones((len(gpus), len(batches)), bool)
            for p in points:
                if (p.hardware, p.interconnect) == kind:
                    grid[gpus.index(p.gpus), batches.index(p.batch)] = getattr(p, attr)
                    converged[gpus.index(p.gpus), batches.index(p.batch)] = p.converged
            ax.imshow(grid, cmap="viridis", aspect="auto")
            for i in range(len(gpus)):
                for j in range(len(batches)):
                    if not np.isnan(grid[i, j]):
                        v = grid[i, j]
                        mark = "" if converged[i, j] else " *"
                        ax.text(j, i, fmt.format(int(v) if fmt == "{:d}" else v) + mark,
                                ha="center", va="center", color="white", fontsize=8)
            ax.set_xticks(range(len(batches)), batches)
            ax.set_yticks(range(len(gpus)), gpus)
            ax.set_xlabel("batch per GPU")
            ax.set_ylabel("GPUs")
            ax.set_title(f"{kind[0]} / {kind[1]}: {title}"
                         + ("" if converged.all() else " (*: not converged)"), fontsize=9)
        fig.tight_layout()
        paths += figures.save(fig, out, f"whatif_{attr}")
    return paths
