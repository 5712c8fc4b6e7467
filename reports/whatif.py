"""Tables and heatmaps of a what-if grid (from its points; nothing is simulated here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from corun.reports import figures

MAX_CORES = 8192
"""The most host cores the what-if's cpu:N search tries; a point no cpu:N up to it
matches records None."""


def markdown(points, model: str, pipeline: str) -> str:
    lines = [f"# What-if: {model} / {pipeline}", "",
             "Planned throughput (corun's plan, simulated), as a share of ideal, and the "
             "smallest cpu:N that matches the plan. Predicted from: `measured` where the "
             "cost model timed every training stage and kernel of the plan on that GPU; "
             "else how its stages were had (interpolated or extrapolated between profiled "
             "batches, borrowed from a model with the same stages, never profiled) and how "
             "many of its kernels no profile timed; `profile FILE` where a machine "
             "profile (`--machine`) scaled them to that machine, `carried from KIND` where "
             "another GPU kind's times were carried by the ceilings.", "",
             "| hardware | interconnect | GPUs | batch/GPU | ideal samples/s "
             "| planned samples/s | of ideal | CPU cores to match | paced by | plan "
             "| predicted from |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        cores = "none" if p.cpu_cores_to_match is None else str(p.cpu_cores_to_match)
        lines.append(f"| {p.hardware} | {p.interconnect} | {p.gpus} | {p.batch} "
                     f"| {p.ideal_samples_per_s:,.0f} | {p.planned_samples_per_s:,.0f} "
                     f"| {100 * p.of_ideal:.1f}% | {cores} | {p.paced_by} | {p.plan}"
                     f"{'' if p.converged else ' *'} | {p.footing or '-'} |")
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
    if any(p.cpu_cores_to_match is None for p in points):
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


METRICS = (("planned_samples_per_s", "planned samples/s", "{:,.0f}"),
           ("of_ideal", "planned throughput, share of ideal", "{:.1%}"),
           ("cpu_cores_to_match", "CPU cores for cpu:N to match the plan", "{:,.0f}"))
"""(Point attribute, what it is, how a cell prints it): one heatmap figure each."""


def _ink(rgba) -> str:
    """Black or white, whichever reads better on a cell of colour `rgba`."""
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def heatmaps(points, out: Path, model: str, pipeline: str) -> list[Path]:
    """Every METRICS heatmap of a what-if grid, saved in `out`."""
    paths = []
    for attr, _, _ in METRICS:
        paths += figures.save(heatmap(points, attr, model, pipeline), out, f"whatif_{attr}")
    return paths


def heatmap(points, attr: str, model: str, pipeline: str):
    """One metric's figure: a panel per hardware and interconnect, GPUs down and batch
    per GPU across, every panel on the figure's one colour scale with its colorbar. A
    point with no value (no cpu:N matches) is grey and says none; an unconverged
    search's cell is starred."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize

    kinds = list(dict.fromkeys((p.hardware, p.interconnect) for p in points))
    gpus = sorted({p.gpus for p in points})
    batches = sorted({p.batch for p in points})
    title, fmt = next((t, f) for a, t, f in METRICS if a == attr)
    values = [getattr(p, attr) for p in points if getattr(p, attr) is not None]
    norm = Normalize(min(values, default=0.0), max(values, default=1.0))
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")
    width = 1.2 + max(3.0, 0.9 * len(batches))
    fig, axes = plt.subplots(1, len(kinds), figsize=(width * len(kinds) + 1.0,
                                                     1.4 + 0.55 * len(gpus) + 0.8),
                             squeeze=False)
    image = None
    for ax, kind in zip(axes[0], kinds):
        grid = np.full((len(gpus), len(batches)), np.nan)
        label = np.full((len(gpus), len(batches)), "", dtype=object)
        for p in points:
            if (p.hardware, p.interconnect) != kind:
                continue
            i, j = gpus.index(p.gpus), batches.index(p.batch)
            v = getattr(p, attr)
            grid[i, j] = np.nan if v is None else v
            label[i, j] = ("none" if v is None else fmt.format(v)) + \
                ("" if p.converged else " *")
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm,
                          aspect="auto")
        for i in range(len(gpus)):
            for j in range(len(batches)):
                if label[i, j]:
                    ink = "black" if np.isnan(grid[i, j]) else \
                        _ink(cmap(norm(grid[i, j])))
                    ax.text(j, i, label[i, j], ha="center", va="center", color=ink,
                            fontsize=9)
        ax.set_xticks(range(len(batches)), [f"{b:,}" for b in batches])
        ax.set_yticks(range(len(gpus)), gpus)
        ax.set_xlabel("batch per GPU")
        ax.set_ylabel("GPUs")
        ax.set_title(f"{kind[0]}, {kind[1]}", fontsize=10)
    starred = any(not p.converged for p in points)
    fig.suptitle(f"{model} / {pipeline}: {title}"
                 + (" (*: search not converged)" if starred else ""), fontsize=11)
    fig.colorbar(image, ax=list(axes[0]), shrink=0.9, label=title)
    return fig
