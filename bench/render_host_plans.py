"""Plans that preprocess on the host CPU, measured beside gpu-sequential: every round of
every executed run where both ran (same GPU count, pipeline, batch and round), with the
two median iterations, their ratio and the host thread's step; one GPU and several
(rank 0's clock under torchrun) summed up apart. The default `corun plan`
(kaggle, batch 4096) chooses such a plan for a predicted gain of a few percent; this says
what the H200 machines measured, run by run. Writes bench/results/host_plans_h200.md.

    python bench/render_host_plans.py [RAW.json ...] [-o OUT.md]

By default every bench/results/raw/execute_*.json.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases, render_main  # noqa: E402
from bench.render_repeats import SEQUENTIAL  # noqa: E402
from spec.serde import stored_glob  # noqa: E402

RAW = stored_glob(ROOT / "bench/results/raw", "execute_*.json")
OUT = ROOT / "bench/results/host_plans_h200.md"


def host_nodes(m: dict) -> int:
    """Op nodes the measured plan ran on the host CPU (0 for baselines without a plan)."""
    return len((m.get("plan") or {}).get("cpu_nodes") or ())


def host_step_ms(m: dict) -> float | None:
    step = (m.get("host") or {}).get("step")
    return step["median_ms"] if step else None


def pairs(raw: list[Path]) -> list[dict]:
    """(run, GPUs, pipeline, batch, round, strategy): a host-CPU plan and gpu-sequential."""
    out = []

    def key(r: dict) -> tuple:
        return r["measurement"]["gpu_count"], r["pipeline"], r["batch"], r.get("repeat", 0)

    for path in raw:
        cases = measured_cases(path)[0]
        seq = {key(r): r["measurement"] for r in cases if r["strategy"] == SEQUENTIAL}
        for r in cases:
            m = r["measurement"]
            base = seq.get(key(r))
            if base is None or r["strategy"].startswith("cpu:") or not host_nodes(m):
                continue
            out.append({"run": path.name, "gpus": m["gpu_count"],
                        "pipeline": r["pipeline"], "batch": r["batch"],
                        "round": r.get("repeat", 0), "strategy": r["strategy"],
                        "host_nodes": host_nodes(m), "plan_ms": m["iteration"]["median_ms"],
                        "sequential_ms": base["iteration"]["median_ms"],
                        "plan_step_ms": host_step_ms(m), "sequential_step_ms": host_step_ms(base)})
    return out


def render(rows: list[dict], raw: list[Path]) -> str:
    def step(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    lines = ["# Host-CPU plans beside gpu-sequential on the H200", "",
             f"Made by `python bench/render_host_plans.py` from {len(raw)} raw files "
             "(bench/results/raw/execute_*.json). Ratio: the plan's median iteration over "
             "gpu-sequential's in the same round (below 1: the plan is faster). Host step: "
             "the median time the host thread took to launch a step.", ""]
    if not rows:
        return "\n".join(lines + ["No round ran both.", ""])
    for several, gpus in ((False, "One GPU"), (True, "Several GPUs")):
        group = [r for r in rows if (r["gpus"] > 1) == several]
        for batch in sorted({r["batch"] for r in group}):
            lines.append(summary(f"{gpus}, batch {batch}", [
                r["plan_ms"] / r["sequential_ms"] for r in group if r["batch"] == batch]))
        if several and group:
            counts = "/".join(map(str, sorted({r["gpus"] for r in group})))
            lines.append(summary(f"{gpus} ({counts}), every batch",
                                 [r["plan_ms"] / r["sequential_ms"] for r in group]))
    lines += ["", "| run | GPUs | pipeline | batch | round | strategy | host nodes | plan ms | "
              "gpu-sequential ms | ratio | host step ms (plan / gpu-sequential) |",
              "|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['run']} | {r['gpus']} | {r['pipeline']} | {r['batch']} | {r['round']} | "
              f"{r['strategy']} | {r['host_nodes']} | {r['plan_ms']:.3f} | "
              f"{r['sequential_ms']:.3f} | {r['plan_ms'] / r['sequential_ms']:.3f} | "
              f"{step(r['plan_step_ms'])} / {step(r['sequential_step_ms'])} |" for r in rows]
    return "\n".join(lines) + "\n"


def summary(label: str, ratios: list[float]) -> str:
    """One line: how many rounds, the ratio's median and range, how often either side won."""
    return (f"{label}: {len(ratios)} rounds, ratio median "
            f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; "
            f"the plan faster by more than 1% in {sum(x < 0.99 for x in ratios)}, slower "
            f"by more than 1% in {sum(x > 1.01 for x in ratios)}.")


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, OUT, "an existing execute_*.json of "
                       "bench/execute_gpu.py", lambda raw: render(pairs(raw), raw))


if __name__ == "__main__":
    raise SystemExit(main())
