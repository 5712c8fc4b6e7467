"""`corun report`: figures and a Markdown summary from prediction and measurement files."""

from __future__ import annotations

from pathlib import Path

from corun.reports import figures
from corun.reports.figures import workload_label
from corun.reports.markdown import markdown_table
from corun.reports.pairs import (
    Pair,
    iteration_points,
    load_files,
    mape,
    pair_up,
    same_hardware,
)
from corun.reports.tail import tail
from corun.spec import Prediction, SpecError
from corun.spec.serde import write_atomic


def _row(p: Pair, scale: float | None) -> list[str]:
    """One pair's row: mean iterations (the throughputs') compared, the median steps
    beside them (a bimodal step parts the two)."""
    pred, meas = p.prediction, p.measurement
    predicted, ms = pred.mean_iteration_ms, meas.mean_iteration_ms
    err = 100 * (predicted - ms) / ms
    cal = "-" if scale is None else f"{100 * (predicted * scale - ms) / ms:+.1f}%"
    return [pred.strategy, f"{pred.model}/{pred.pipeline}", str(pred.batch_per_gpu),
            str(pred.gpu_count), f"{predicted:.3f}", f"{ms:.3f}", f"{err:+.1f}%",
            cal, f"{pred.iteration_time_ms:.3f}", f"{meas.iteration.median_ms:.3f}"]


def _workload(x) -> tuple:
    return (x.model, x.pipeline, x.batch_per_gpu, x.gpu_count)


def calibration_scales(pairs: list[Pair]) -> dict[tuple, float]:
    """Per workload with its ideal among the pairs: measured ideal over predicted, the
    factor `corun plan --calibration` would scale that workload's predictions by
    (costmodel/calibration.py; a prediction made calibrated gives 1)."""
    return {_workload(p.measurement): p.measurement.mean_iteration_ms
            / p.prediction.mean_iteration_ms
            for p in pairs if p.measurement.strategy == "ideal"}


def _tail_section(meas: list) -> list[str]:
    """Runs whose slowest tenth of iterations is over 10% above the typical one, and which
    piece grew (reports/tail.py)."""
    rows = []
    for m in meas:
        t = tail(m)
        if t is None or t.slow_ms <= 1.1 * t.typical_ms:
            continue
        top = sorted(t.extra_ms.items(), key=lambda kv: -kv[1])[:3]
        rows.append([m.strategy, f"{m.model}/{m.pipeline}", str(m.batch_per_gpu),
                     f"{t.typical_ms:.3f}", f"{t.slow_ms:.3f}",
                     ", ".join(f"{k} {v:+.2f}" for k, v in top)])
    if not rows:
        return []
    return ["## Slow iterations", "",
            "The slowest 10% of iterations against the middle half (mean ms), and the "
            "pieces that grew most (ms; `batch_wait`: the training stream waiting for its "
            "batch, `busy`: its own work, `stage_*`: each training stage, `span_*`: the "
            "batch's copy, kernels and assembly beside it, `host_*`: the host thread's "
            "pieces).", "",
            markdown_table(["strategy", "workload", "batch", "typical ms", "slowest 10% ms",
                            "grew most"], rows), ""]


def report(paths: list[str], out: Path) -> Path:
    """Draw every figure the inputs allow and write summary.md; returns its path."""
    inputs = load_files(paths)
    preds, meas = inputs.predictions, inputs.measurements
    if not preds:
        raise SpecError("report inputs", len(paths), "at least one Prediction file")
    matched = pair_up(preds, meas)
    pairs = [p for p in matched if same_hardware(p)]
    lines = ["# corun report", "",
             f"{len(preds)} prediction(s), {len(meas)} measurement(s): "
             + ", ".join(f"`{p}`" for p in paths), ""]
    elsewhere = [p for p in matched if not same_hardware(p)]
    if elsewhere:
        lines += ["## Not compared: run on other hardware", "",
                  "These runs were made on another kind of device than their predictions "
                  "are for; they are left out of every error and figure below (predict for "
                  "the hardware run on: `--hardware`, `--machine`).", "",
                  markdown_table(["strategy", "workload", "measured on", "predicted for",
                                  "measurement", "prediction"],
                                 [[p.measurement.strategy, workload_label(p),
                                   p.measurement.hardware, p.prediction.hardware,
                                   f"`{inputs.path(p.measurement)}`",
                                   f"`{inputs.path(p.prediction)}`"] for p in elsewhere]),
                  ""]
    paired = {id(p.prediction) for p in matched}
    alone = [p for p in preds if id(p) not in paired]
    if alone:
        lines += [f"Not compared: {len(alone)} prediction(s) no measurement matches "
                  "(strategy, model, pipeline, batch and GPUs): "
                  + ", ".join(f"{p.strategy} ({p.model}/{p.pipeline} b{p.batch_per_gpu} x "
                              f"{p.gpu_count})" for p in alone), ""]
    if pairs:
        figures.save(figures.scatter(pairs), out, "predicted_vs_measured")
        figures.save(figures.stage_bars(pairs), out, "stages")
        for i, pair in enumerate(pairs):
            figures.save(figures.timeline(pair), out, f"timeline_{i}")
        it = iteration_points(pairs)
        scales = calibration_scales(pairs)
        others = [(p.prediction.mean_iteration_ms * scales[_workload(p.measurement)],
                   p.measurement.mean_iteration_ms) for p in pairs
                  if _workload(p.measurement) in scales and p.measurement.strategy != "ideal"]
        calibrated = [] if not others else [
            f"Calibrated by each workload's measured ideal (every prediction times measured "
            f"ideal over predicted, as `corun plan --calibration` scales): MAPE "
            f"{mape(others):.1f}% over the {len(others)} other run(s).", ""]
        lines += ["## Predicted against measured", "",
                  f"Iteration time MAPE: {mape(it):.1f}% over {len(pairs)} run(s), "
                  "each a mean iteration (the throughput's: every slow step counted).", "",
                  *calibrated,
                  "![predicted vs measured](predicted_vs_measured.png)", "",
                  markdown_table(["strategy", "workload", "batch", "GPUs",
                                  "predicted ms/iteration", "measured ms/iteration", "error",
                                  "calibrated error", "predicted median step ms",
                                  "measured median step ms"],
                                 [_row(p, scales.get(_workload(p.measurement)))
                                  for p in pairs]),
                  "", "![stages](stages.png)", ""]
        lines += [f"![timeline {i}](timeline_{i}.png)" for i in range(len(pairs))] + [""]
    lines += _tail_section(meas)
    groups: dict[tuple, list[Prediction]] = {}
    for p in preds:
        groups.setdefault((p.model, p.pipeline, p.batch_per_gpu, p.gpu_count), []).append(p)
    for n, (k, group) in enumerate(sorted(groups.items())):
        if not any(p.strategy == "ideal" for p in group):
            continue
        measured = {m.strategy: m.throughput_samples_per_s
                    for m in (p.measurement for p in pairs)
                    if (m.model, m.pipeline, m.batch_per_gpu, m.gpu_count) == k}
        figures.save(figures.strategies(group, measured), out, f"strategies_{n}")
        ideal = next(p for p in group if p.strategy == "ideal").throughput_samples_per_s
        rows = [[p.strategy, f"{p.throughput_samples_per_s:,.0f}",
                 f"{100 * p.throughput_samples_per_s / ideal:.1f}%",
                 f"{measured[p.strategy]:,.0f}" if p.strategy in measured else "-"]
                for p in group]
        lines += [f"## Strategies: {k[0]}/{k[1]}, batch {k[2]}, {k[3]} GPU(s)", "",
                  f"![strategies](strategies_{n}.png)", "",
                  markdown_table(["strategy", "predicted samples/s", "of ideal",
                                  "measured samples/s"], rows), ""]
    path = out / "summary.md"
    write_atomic(path, "\n".join(lines) + "\n")
    return path
