"""Planned strategies executed on the H200 against the predictions they were chosen on:
bench/results/raw/execute_plans_run15.json and run16 (bench/execute_gpu.py --matrix plans;
given several files, a later run's case replaces an earlier one's) next to
bench/plans/<pipeline>-b<batch>/prediction-<strategy>.json (bash bench/plans/make.sh, the
learned H200 model and the host thread; bench/plans/<model>-b<batch>/ for a model that is
not its pipeline's default, such as heavy-fused). A measured plan that is no longer the
one in bench/plans/ (the cost model changed after it ran), or one without a prediction
file (--matrix heavy-stages' "at:<stage>"), is predicted afresh, by the same simulation,
and marked. Writes bench/results/plans_h200.md.

    python bench/render_plans.py [RAW.json ...] [-o OUT.md]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import spec  # noqa: E402
from bench.render_execute import (  # noqa: E402
    graphed,
    measured_cases,
    measured_scenario,
    plan_file,
    plan_unchanged,
    release_offset_ms,
    render_main,
    shares_of_ideal,
    suffix_number,
    update_blocks_per_sm,
)
from reports.rounds import record_iteration_ms  # noqa: E402

RAW = [ROOT / f"bench/results/raw/execute_plans_run{n}.json" for n in (15, 16)]
OUT = ROOT / "bench/results/plans_h200.md"


def plan_folder(pipeline: str, model: str, batch: int, graphs: bool = False,
                gpus: int = 1) -> Path:
    """Where bench/plans/make.sh put a workload's plans and predictions (under graphs/
    for the step replayed as CUDA graphs, under x<N>/ for N GPUs)."""
    name = pipeline if model == spec.DEFAULT_MODEL_FOR[pipeline] else model
    sub = "graphs" if graphs else (f"x{gpus}" if gpus > 1 else "")
    return ROOT / "bench/plans" / sub / f"{name}-b{batch}"


def unpredicted(strategy: str) -> str | None:
    """Why an executed variant is not predicted (the model knows none of these ways to
    run a step or a kernel), as a note; None where it is."""
    suffixes = strategy.split("+")[1:]
    if "uncapped" in suffixes:  # the model knows the default update grid only
        return " (not predicted: the uncapped embedding update)"
    if update_blocks_per_sm(suffixes) is not None:
        return " (not predicted: the embedding update on its own grid)"
    if any(suffix_number(suffixes, x) is not None for x in ("sm", "upd", "cap")):
        return " (not predicted: SMs split by green contexts)"
    if (suffix_number(suffixes, "u") or 1) > 1:
        return " (not predicted: the values kernel unrolled)"
    if suffix_number(suffixes, "r") is not None:
        return " (not predicted: the values kernel's registers capped)"
    if release_offset_ms(suffixes):
        return " (not predicted: released after an offset into its stage)"
    return None


def predicted_ms(case: dict) -> tuple[float, str]:
    """(the mean iteration predicted for a measured case, as its throughput counts it, a
    note): from the prediction file `corun plan` wrote beside the plan it ran; simulated
    afresh, and noted, where there is none or the plan there is no longer the one that
    ran."""
    from sim import simulate_steady

    m, strategy = case["measurement"], case["strategy"]
    why_not = unpredicted(strategy)
    if why_not is not None:
        return math.nan, why_not
    folder = plan_folder(case["pipeline"], m["model"], case["batch"], graphed(m),
                         m.get("gpu_count", 1))
    predicted = folder / f"prediction-{strategy}.json"
    name = plan_file(strategy)
    stale = name is not None and not plan_unchanged(m["plan"], folder / name)
    note = " (earlier plan, re-predicted)" if stale else ""
    if not predicted.exists():
        note = " (predicted here)"
    if note:  # predicted afresh, as `corun plan` simulates its candidates
        return simulate_steady(measured_scenario(m, strategy)).prediction.mean_iteration_ms, note
    return record_iteration_ms(json.loads(predicted.read_text())), note


def rows(raw: list[Path]) -> list[dict]:
    """One row per (pipeline, batch, strategy), from the last file that measured it; each
    share of ideal is against the ideal of the same command."""
    out: dict[tuple, dict] = {}
    for path in raw:
        runs, ideal = measured_cases(path)
        for r in runs:
            m, key = r["measurement"], (r["pipeline"], r["batch"])
            if key not in ideal:
                continue
            p, note = predicted_ms(r)
            workload = key[0] if m["model"] == spec.DEFAULT_MODEL_FOR[key[0]] else \
                f"{key[0]} / {m['model']}"
            ms = record_iteration_ms(m)
            out[(*key, r["strategy"])] = {
                "pipeline": workload, "batch": key[1], "strategy": r["strategy"], "note": note,
                "measured_ms": ms, "median_step_ms": m["iteration"]["median_ms"],
                "p90_ms": m["iteration"]["p90_ms"],
                **shares_of_ideal(m, ideal[key]),
                "predicted_ms": p, "error_pct": 100 * (p - ms) / ms,
                "host": {k: v["median_ms"] for k, v in m["host"].items()},
                "command": m["command"], "source": path.name}
    return list(out.values())


def render(rs: list[dict]) -> str:
    lines = ["# Planned strategies on the H200: measured against predicted", "",
             "Made by `python bench/render_plans.py` from "
             + ", ".join(sorted({f"`bench/results/raw/{r['source']}`" for r in rs}))
             + " (a later run's case replaces an earlier one's); measured with "
             + "; ".join(sorted({f"`{r['command']}`" for r in rs}))
             + " (200 timed iterations after 20; every value of the batches checked on "
             "the device: every batch in runs before 2026-12-02, the warmup's since, as "
             "each Measurement's notes say). Predictions: `bash bench/plans/make.sh` "
             "(learned H200 model + host thread). Predicted against measured: mean "
             "iterations, as the throughputs count them (every slow iteration counted, "
             "which the median step leaves out). Shares of ideal: by median step, and by "
             "throughput.", "",
             "| workload | strategy | measured ms/iteration | median step ms (p90) | "
             "of ideal: median / throughput | predicted ms/iteration | error | "
             "host ms: step / wait / finish / check |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rs:
        h = r["host"]
        lines.append(f"| {r['pipeline']} b{r['batch']} | {r['strategy']}{r['note']} | "
                     f"{r['measured_ms']:.3f} | {r['median_step_ms']:.3f} ({r['p90_ms']:.2f}) | "
                     f"{r['of_ideal_pct']:.1f}% / "
                     f"{r['of_ideal_tput_pct']:.1f}% | "
                     f"{r['predicted_ms']:.3f} | {r['error_pct']:+.1f}% | "
                     + " / ".join(f"{h.get(k, 0):.2f}" for k in ("step", "wait", "finish",
                                                                  "check")) + " |")
    errs = [abs(r["error_pct"]) for r in rs]
    lines += ["", f"Iteration-time error: mean {statistics.mean(errs):.1f}%, median "
              f"{statistics.median(errs):.1f}%, {sum(e <= 5 for e in errs)} of {len(errs)} "
              "within 5%.", ""]
    best: dict[tuple, list] = {}
    for r in rs:
        if not r["strategy"].startswith("ideal"):  # "ideal+eager": no preprocessing either
            best.setdefault((r["pipeline"], r["batch"]), []).append(r)
    lines.append("| workload | measured best by median | by throughput | planner's corun "
                 "plan: median / throughput |")
    lines.append("|---|---|---|---|")
    for (p, b), cand in best.items():
        by_ms = min(cand, key=lambda r: r["median_step_ms"])
        by_tput = max(cand, key=lambda r: r["of_ideal_tput_pct"])
        corun = next((r for r in cand if r["strategy"] == "corun"), None)
        lines.append(f"| {p} b{b} | {by_ms['strategy']} ({by_ms['of_ideal_pct']:.1f}%) | "
                     f"{by_tput['strategy']} ({by_tput['of_ideal_tput_pct']:.1f}%) | "
                     + (f"{corun['of_ideal_pct']:.1f}% / {corun['of_ideal_tput_pct']:.1f}%"
                        if corun else "-") + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, OUT, "an existing execute_plans_*.json",
                       lambda raw: render(rows(raw)))


if __name__ == "__main__":
    raise SystemExit(main())
