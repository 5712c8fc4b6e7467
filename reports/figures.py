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


def _identity_panel(ax, pts: list[tuple[float, float]], what: str, unit: str) -> None:
    """(predicted, measured) points against y = x with a ±5% band; MAPE in the title."""
    xs = [m for _, m in pts]
    ys = [p for p, _ in pts]
    lo = 0.0 if unit == "ms" else min(xs + ys) * 0.98
    hi = max(xs + ys + [1e-3]) * (1.1 if unit == "ms" else 1.02)
    ax.fill_between([lo, hi], [lo * (1 - BAND), hi * (1 - BAND)],
                    [lo * (1 + BAND), hi * (1 + BAND)], color="0.9", label="±5%")
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=1, label="y = x")
    ax.scatter(xs, ys, s=12 if len(pts) > 100 else 18, label=what)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    ax.set_title(f"{what}: MAPE {mape(pts):.1f}% ({len(pts)} points)")
    ax.legend(loc="upper left", fontsize=8)


def scatter(pairs: list[Pair]) -> Figure:
    """Predicted against measured: mean iteration time (left; the throughputs') and
    per-stage time (right; medians), with y = x, a ±5% band and the MAPE in each title."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    it = iteration_points(pairs)
    stages = [(s.time_ms, p.measurement.stages[s.stage].median_ms)
              for p in pairs for s in p.prediction.stages if s.stage in p.measurement.stages]
    _identity_panel(axes[0], it, "iteration time", "ms")
    _identity_panel(axes[1], stages, "per-stage time", "ms")
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


def stage_bars(pairs: list[Pair]) -> Figure:
    """Per plan, stacked stage times: predicted beside measured."""
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(pairs)), 4.8))
    stages = [s.stage for s in pairs[0].prediction.stages] if pairs else []
    colors = plt.get_cmap("tab20")
    for i, pair in enumerate(pairs):
        for j, (which, vals) in enumerate((
                ("predicted", {s.stage: s.time_ms for s in pair.prediction.stages}),
                ("measured", {k: v.median_ms for k, v in pair.measurement.stages.items()}))):
            bottom = 0.0
            for k, st in enumerate(stages):
                v = vals.get(st, 0.0)
                ax.bar(i + (j - 0.5) * 0.38, v, 0.36, bottom=bottom, color=colors(k % 20),
                       label=st if i == 0 and j == 0 else None,
                       hatch="//" if which == "measured" else None, edgecolor="white")
                bottom += v
    ax.set_xticks(range(len(pairs)), [p.label for p in pairs], rotation=20, ha="right",
                  fontsize=8)
    ax.set_ylabel("time per iteration (ms); left predicted, right (hatched) measured")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1, 1))
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
    """Throughput of each strategy as a share of ideal (predicted; measured beside)."""
    ideal = next((p for p in preds if p.strategy == "ideal"), None)
    if ideal is None:
        raise ValueError("strategy comparison needs the 'ideal' prediction")
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(preds)), 4))
    names = [p.strategy for p in preds]
    pct = [100 * p.throughput_samples_per_s / ideal.throughput_samples_per_s for p in preds]
    ax.bar([i - 0.2 for i in range(len(preds))], pct, 0.4, label="predicted")
    if measured:
        base = measured.get("ideal")
        vals = [100 * measured[n] / base if base and n in measured else 0 for n in names]
        ax.bar([i + 0.2 for i in range(len(preds))], vals, 0.4, label="measured")
    ax.axhline(100, color="0.4", lw=1)
    ax.set_xticks(range(len(preds)), names, rotation=20, ha="right")
    ax.set_ylabel("throughput, % of ideal")
    ax.set_title(f"{ideal.model} / {ideal.pipeline} on {ideal.gpu_count} x {ideal.hardware}")
    ax.legend()
    fig.tight_layout()
    return fig
