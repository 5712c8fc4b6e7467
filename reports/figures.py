"""Figures from predictions and measurements (matplotlib, Agg). Each returns the Figure
and saves PNG and SVG next to each other. Figures only read what they are given."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from corun.reports.pairs import Pair, iteration_points, mape  # noqa: E402
from corun.spec import Prediction  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

BAND = 0.05


def save(fig: Figure, out: Path, name: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for p in paths:
        fig.savefig(p, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return paths


MARKERS = "osD^vPX*<>ph"
"""One marker per workload in a scatter (they repeat past a dozen)."""


def _identity_panel(ax, pts: list[tuple[float, float]], what: str, unit: str,
                    strategy: list[str] | None = None,
                    workload: list[str] | None = None) -> None:
    """(predicted, measured) points against y = x with a ±5% band; MAPE in the title.
    With `strategy` and `workload` (one label per point), a colour per strategy and a
    marker per workload, each in its own legend."""
    xs = [m for _, m in pts]
    ys = [p for p, _ in pts]
    lo = 0.0 if unit == "ms" else min(xs + ys) * 0.98
    hi = max(xs + ys + [1e-3]) * (1.1 if unit == "ms" else 1.02)
    ax.fill_between([lo, hi], [lo * (1 - BAND), hi * (1 - BAND)],
                    [lo * (1 + BAND), hi * (1 + BAND)], color="0.9", label="±5%")
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=1, label="y = x")
    size = 14 if len(pts) > 100 else 24
    if strategy is None or workload is None:
        ax.scatter(xs, ys, s=size, label=what)
        ax.legend(loc="upper left", fontsize=8)
    else:
        colors = {k: plt.get_cmap("tab10")(i % 10)
                  for i, k in enumerate(dict.fromkeys(sorted(strategy)))}
        marks = {k: MARKERS[i % len(MARKERS)]
                 for i, k in enumerate(dict.fromkeys(sorted(workload)))}
        for (k, w) in dict.fromkeys(zip(strategy, workload)):
            pick = [i for i, kw in enumerate(zip(strategy, workload)) if kw == (k, w)]
            ax.scatter([xs[i] for i in pick], [ys[i] for i in pick], s=size,
                       color=colors[k], marker=marks[w], alpha=0.85, edgecolor="none")
        band = ax.legend(loc="upper left", fontsize=8)
        ax.add_artist(band)
        handles = [plt.Line2D([], [], ls="", marker="o", color=c, label=k)
                   for k, c in colors.items()]
        handles += [plt.Line2D([], [], ls="", marker=m, color="0.35", label=w)
                    for w, m in marks.items()]
        ax.legend(handles=handles, loc="lower right", fontsize=7, title="strategy; workload",
                  title_fontsize=7, ncol=1 + len(handles) // 12)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    ax.set_title(f"{what}: MAPE {mape(pts):.1f}% ({len(pts)} points)")


def workload_label(pair: Pair) -> str:
    m = pair.measurement
    return f"{m.model}/{m.pipeline} b{m.batch_per_gpu} x{m.gpu_count}"


def scatter(pairs: list[Pair]) -> Figure:
    """Predicted against measured: mean iteration time (left; the throughputs') and
    per-stage time (right; medians), with y = x, a ±5% band and the MAPE in each title;
    a colour per strategy, a marker per workload."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    it = iteration_points(pairs)
    stages, of = [], []
    for p in pairs:
        for s in p.prediction.stages:
            if s.stage in p.measurement.stages:
                stages.append((s.time_ms, p.measurement.stages[s.stage].median_ms))
                of.append(p)
    _identity_panel(axes[0], it, "iteration time", "ms",
                    [p.prediction.strategy for p in pairs], [workload_label(p) for p in pairs])
    _identity_panel(axes[1], stages, "per-stage time", "ms",
                    [p.prediction.strategy for p in of], [workload_label(p) for p in of])
    fig.tight_layout()
    return fig


def heldout_scatter(pred: dict, true: dict) -> Figure:
    """The learned co-run model on held-out rows: kernel alone, kernel co-run (ms) and
    stage slowdown (factor), predicted against measured."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    for ax, (t, unit) in zip(axes, (("kernel_alone", "ms"), ("kernel_corun", "ms"),
                                     ("stage_slowdown", "x"))):
        _identity_panel(ax, list(zip(map(float, pred[t]), map(float, true[t]))),
                        t.replace("_", " "), unit)
    fig.tight_layout()
    return fig


STAGE_ROWS = 30
"""The most runs a stage figure shows (the rest by the largest iteration error): it fits
a page; every run stays in the summary's table and its trace."""


def stage_bars(pairs: list[Pair]) -> Figure:
    """Per run, stacked stage times as horizontal bars, predicted above measured (hatched),
    at most STAGE_ROWS runs, so that the figure fits a page."""
    error = [abs(p.prediction.mean_iteration_ms / p.measurement.mean_iteration_ms - 1)
             for p in pairs]
    keep = sorted(sorted(range(len(pairs)), key=lambda i: -error[i])[:STAGE_ROWS])
    shown = [pairs[i] for i in keep]
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.42 * len(shown)))
    stages = list(dict.fromkeys(s.stage for p in shown for s in p.prediction.stages))
    colors = plt.get_cmap("tab20")
    for i, pair in enumerate(shown):
        for j, (which, vals) in enumerate((
                ("predicted", {s.stage: s.time_ms for s in pair.prediction.stages}),
                ("measured", {k: v.median_ms for k, v in pair.measurement.stages.items()}))):
            left = 0.0
            for k, st in enumerate(stages):
                v = vals.get(st, 0.0)
                ax.barh(i + (j - 0.5) * 0.4, v, 0.38, left=left, color=colors(k % 20),
                        label=st if i == 0 and j == 0 else None,
                        hatch="//" if which == "measured" else None, edgecolor="white",
                        linewidth=0.5)
                left += v
    ax.set_yticks(range(len(shown)), [p.label for p in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms an iteration, stages stacked (upper bar predicted, lower hatched "
                  "measured)")
    title = "Training stages, predicted and measured"
    if len(shown) < len(pairs):
        title += f": the {len(shown)} of {len(pairs)} runs with the largest error"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def timeline(pair: Pair) -> Figure:
    """One GPU's iteration, predicted above measured: training stages in order, and the
    predicted co-running kernels on their own lane."""
    fig, ax = plt.subplots(figsize=(11, 2.8))
    colors = plt.get_cmap("tab20")
    order = [s.stage for s in pair.prediction.stages]
    before = [k for k in pair.prediction.kernels if k.stage == "before"]
    lead = sum(k.time_ms for k in before)  # kernels before the iteration come first
    rows = (({s.stage: s.time_ms for s in pair.prediction.stages}, 2, lead),
            ({k: v.median_ms for k, v in pair.measurement.stages.items()}, 0, 0.0))
    for vals, y, t in rows:
        for k, st in enumerate(order):
            v = vals.get(st, 0.0)
            ax.barh(y, v, left=t, color=colors(k % 20), edgecolor="white")
            if v > 0.06 * sum(vals.values()):
                ax.text(t + v / 2, y, st, ha="center", va="center", fontsize=6)
            t += v
    start = {"before": 0.0}
    t = lead
    for s in pair.prediction.stages:
        start[s.stage] = t
        t += s.time_ms
    for k in pair.prediction.kernels:  # one stream: a stage's kernels (and the batch's
        left = start.get(k.stage, 0.0)  # assembly) one after another
        start[k.stage] = left + k.time_ms
        ax.barh(1, k.time_ms, left=left, color="0.3", height=0.5)
        ax.text(left, 1, f" {k.kernel}", va="center", fontsize=6, color="white")
    ax.set_yticks([0, 1, 2], ["measured", "predicted kernels", "predicted"])
    ax.set_xlabel("ms from the iteration's start")
    ax.set_title(pair.label)
    fig.tight_layout()
    return fig


def strategies(preds: list[Prediction], measured: dict[str, float] | None = None) -> Figure:
    """Throughput of each strategy as a share of ideal: predicted (filled) and measured
    (hollow) dots on an axis that spans the values, so gaps of a few percent show."""
    ideal = next((p for p in preds if p.strategy == "ideal"), None)
    if ideal is None:
        raise ValueError("strategy comparison needs the 'ideal' prediction")
    measured = measured or {}
    names = [p.strategy for p in preds]
    pct = [100 * p.throughput_samples_per_s / ideal.throughput_samples_per_s for p in preds]
    base = measured.get("ideal")
    got = {n: 100 * measured[n] / base for n in names if base and n in measured}
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.4 * len(preds)))
    ax.scatter(pct, range(len(preds)), s=40, color="tab:blue", label="predicted", zorder=3)
    for i, v in enumerate(pct):
        ax.annotate(f"{v:.1f}%", (v, i), textcoords="offset points", xytext=(6, 4),
                    fontsize=8, color="tab:blue")
    if got:
        ys = [i for i, n in enumerate(names) if n in got]
        ax.scatter([got[names[i]] for i in ys], ys, s=40, facecolor="none",
                   edgecolor="tab:orange", linewidth=1.5, label="measured", zorder=3)
        for i in ys:
            ax.annotate(f"{got[names[i]]:.1f}%", (got[names[i]], i), textcoords="offset points",
                        xytext=(6, -10), fontsize=8, color="tab:orange")
    values = pct + list(got.values()) + [100.0]
    span = max(values) - min(values)
    ax.set_xlim(min(values) - 0.08 * span - 0.5, max(values) + 0.15 * span + 0.5)
    ax.axvline(100, color="0.5", lw=1, ls="--")
    ax.set_yticks(range(len(preds)), names)
    ax.invert_yaxis()
    ax.grid(axis="x", color="0.9")
    ax.set_xlabel("throughput, % of ideal")
    ax.set_title(f"{ideal.model} / {ideal.pipeline}, batch {ideal.batch_per_gpu} on "
                 f"{ideal.gpu_count} x {ideal.hardware}", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig
