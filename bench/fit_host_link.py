"""Fit the host link's copy time (latency + bytes / bandwidth) on the batches' measured
host-to-device copies: every one-GPU case of executed runs whose step records its `h2d`
stage, the bytes as the simulator counts them (sim.scenario's copy of each batch's raw
columns). Relative least squares over each model and batch's median copy, so the small
copies of Criteo batches weigh as much as heavy's 175-262 MB.

    python bench/fit_host_link.py [RAW.json.gz ...] [-o OUT.md]
writes bench/results/host_link_h200.md from its default runs."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases, measured_scenario  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

RAW = [ROOT / "bench/results/raw" / n for n in (
    "execute_flat_plans_rounds_run5.json.gz", "execute_heavy_lean_graphs_b16384_run2.json.gz",
    "execute_heavy_lean_graphs_b24576_run2.json.gz", "execute_flat_heavy_rounds_run1.json.gz")]
OUT = ROOT / "bench/results/host_link_h200.md"


def copies(raw: list[Path]) -> dict[tuple[str, int], tuple[float, list[float]]]:
    """(model, batch) -> (MB the simulator copies a batch, measured h2d medians in ms)."""
    from costmodel.learned import cost_model_for
    from sim.scenario import compile_scenario

    out: dict[tuple[str, int], tuple[float, list[float]]] = {}
    for path in raw:
        for r in measured_cases(path)[0]:
            m = r["measurement"]
            if m["gpu_count"] != 1 or "h2d" not in m["stages"] or r["strategy"] == "ideal":
                continue
            sc = measured_scenario(m, r["strategy"])
            h2d_ms = compile_scenario(sc, cost_model_for(sc.hardware)).gpus[0].h2d_ms
            link = sc.hardware.host_link
            mb = (h2d_ms - link.latency_us * 1e-3) * link.bytes_per_s / 1e9
            if mb <= 0:
                continue
            key = (m["model"], m["batch_per_gpu"])
            out.setdefault(key, (mb, []))[1].append(m["stages"]["h2d"]["median_ms"])
    return out


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(latency ms, GB/s) minimising the squared relative error of latency + MB / GB/s."""
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    a = np.vstack([1 / y, x / y]).T
    (latency, inv), *_ = np.linalg.lstsq(a, np.ones_like(y), rcond=None)
    return float(latency), float(1 / inv)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="*", type=Path)
    ap.add_argument("-o", "--out", type=Path)
    a = ap.parse_args(argv)
    raw = a.raw or RAW
    found = copies(raw)
    points = [(mb, statistics.median(ms)) for mb, ms in found.values()]
    latency, gbps = fit(points)
    named = "".join(f" {p}" for p in a.raw)
    lines = ["# The host link's copy time, fitted on the H200 machine's measured copies", "",
             f"Made by `python bench/fit_host_link.py{named}` over "
             f"{', '.join(p.name for p in raw)}: {sum(len(v[1]) for v in found.values())} "
             f"cases, {len(found)} model/batch pairs.", "",
             f"Fitted: **{latency * 1e3:.0f} us + MB / {gbps:.1f} GB/s** a batch's copy.", "",
             "| model | batch | MB a batch | measured ms (median) | fitted ms | error | "
             "52 GB/s + 10 us | error |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (model, batch), (mb, ms) in sorted(found.items(), key=lambda kv: kv[1][0]):
        y = statistics.median(ms)
        f, old = latency + mb / gbps, 0.01 + mb / 52
        lines.append(f"| {model} | {batch} | {mb:.1f} | {y:.3f} | {f:.3f} | "
                     f"{100 * (f / y - 1):+.1f}% | {old:.3f} | {100 * (old / y - 1):+.1f}% |")
    text = "\n".join(lines) + "\n"
    if a.out or not a.raw:
        write_atomic(a.out or OUT, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
