"""Issue 8's multi-GPU runs against their predictions: bench/results/raw/
execute_multigpu_run<N>.json (bench/execute_gpu.py --matrix multigpu under torchrun on an
H200 x4, or x2) -> bench/results/multigpu_h200.md (or -o).

Every measured plan is predicted afresh, by the simulation `corun plan` runs (learned
H200 model, host thread with the distributed step of costmodel/host.py), so the table
shows what the model says now of what ran; "calibrated" scales each workload's
predictions by its ideal's measured over predicted time in the same command (the host's
pace taken from the machine at hand). Measured collective times are the GPU's
time between the stage marks around each collective: they include the GPU waiting for
the host to launch it, so they bound the transfer from above.

    python bench/render_multigpu.py [RAW.json ...] [-o OUT.md]
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import (  # noqa: E402
    measured_cases,
    measured_scenario,
    render_main,
    shares_of_ideal,
)

RAW = [ROOT / "bench/results/raw/execute_multigpu_run2.json"]
OUT = ROOT / "bench/results/multigpu_h200.md"
FIT_SOURCE = "execute_multigpu_run6.json"
"""The run costmodel/host.py's distributed_* host constants were fitted on (every row)."""
COMM = ("input_a2a", "emb_a2a_fwd", "emb_a2a_bwd", "grad_allreduce")


def rows(raw: list[Path]) -> list[dict]:
    """One row per measured case (a later file's case replaces an earlier one's), with
    its prediction; shares of ideal are against the same command's ideal."""
    from sim import EmbeddingComm, simulate

    out: dict[tuple, dict] = {}
    for path in raw:
        cases, ideal = measured_cases(path)
        for r in cases:
            m, key = r["measurement"], (r["pipeline"], r["batch"])
            sc = measured_scenario(m, r["strategy"])
            pred = simulate(sc).prediction
            stages = {k: v["median_ms"] for k, v in m["stages"].items()}
            row = {"pipeline": key[0], "batch": key[1], "strategy": r["strategy"],
                   "gpus": m["gpu_count"],
                   "fitted": path.name == FIT_SOURCE,
                   "measured_ms": m["iteration"]["median_ms"], "p90_ms": m["iteration"]["p90_ms"],
                   "predicted_ms": pred.iteration_time_ms,
                   "comm": {s: stages.get(s, 0.0) for s in COMM},
                   "comm_pred": {x.stage: x.time_ms for x in pred.stages if x.stage in COMM},
                   "host_step_ms": m["host"]["step"]["median_ms"],
                   "source": path.name, "command": m["command"], "commit": m["git_commit"]}
            row["error_pct"] = 100 * (row["predicted_ms"] - row["measured_ms"]) / row["measured_ms"]
            if key in ideal:
                row.update(shares_of_ideal(m, ideal[key]))
            if r["strategy"] == "ideal":
                pgas = simulate(replace(sc, embedding_comm=EmbeddingComm.PGAS)).prediction
                row["pgas_ms"] = pgas.iteration_time_ms
                row["pgas_comm"] = {x.stage: x.time_ms for x in pgas.stages if x.stage in COMM}
            out[(*key, r["strategy"])] = row
    rs = list(out.values())
    ideal_of = {(r["source"], r["pipeline"], r["batch"]): r for r in rs
                if r["strategy"] == "ideal"}
    for r in rs:
        base = ideal_of.get((r["source"], r["pipeline"], r["batch"]))
        if base is not None and r is not base:
            r["calibrated_ms"] = r["predicted_ms"] * base["measured_ms"] / base["predicted_ms"]
            r["calibrated_error_pct"] = 100 * (r["calibrated_ms"] - r["measured_ms"]) / \
                r["measured_ms"]
    return rs


def render(rs: list[dict]) -> str:
    sources = sorted({r["source"] for r in rs})
    gpus = "/".join(str(g) for g in sorted({r["gpus"] for r in rs}))
    lines = [f"# {gpus} H200s: measured against predicted (issue 8)", "",
             "Made by `python bench/render_multigpu.py` from "
             + ", ".join(f"`bench/results/raw/{s}`" for s in sources) + "; measured with "
             + "; ".join(sorted({f"`{r['command']}`" for r in rs})) + " at commit "
             + ", ".join(sorted({r["commit"][:7] for r in rs})) + " under `torchrun "
             f"--standalone --nproc-per-node {gpus}` with NCCL (NVLink multicast off), 200 timed "
             "iterations after 20, every value of the batches checked on the device (every "
             "batch before 2026-12-02, the warmup's since: each Measurement's notes say); "
             "rank 0's clock. Predictions: each measured plan simulated now (learned H200 "
             "model, host thread; the `distributed_*` host constants of costmodel/host.py "
             f"were fitted on every row of {FIT_SOURCE}: every other row "
             "tests them).", "",
             "| workload | strategy | measured ms (p90) | of ideal: median / throughput | "
             "predicted ms | error | calibrated error | host step ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rs:
        lines.append(f"| {r['pipeline']} b{r['batch']} x{r['gpus']} | {r['strategy']} | "
                     f"{r['measured_ms']:.3f} ({r['p90_ms']:.2f}) | "
                     + (f"{r['of_ideal_pct']:.1f}% / {r['of_ideal_tput_pct']:.1f}%"
                        if "of_ideal_pct" in r else "-")
                     + f" | {r['predicted_ms']:.3f} | {r['error_pct']:+.1f}% | "
                     + (f"{r['calibrated_error_pct']:+.1f}%" if "calibrated_ms" in r else "-")
                     + f" | {r['host_step_ms']:.2f} |")
    for fitted, which in ((False, "not fitted on (held out)"),
                          (True, "fitted on (in sample)")):
        errs = [abs(r["error_pct"]) for r in rs if r["fitted"] == fitted]
        if errs:
            lines += ["", f"Iteration-time error of the rows the host constants were {which}: "
                      f"mean {statistics.mean(errs):.1f}%, median "
                      f"{statistics.median(errs):.1f}%, {sum(e <= 5 for e in errs)} of "
                      f"{len(errs)} within 5%."]
    cal = [abs(r["calibrated_error_pct"]) for r in rs if "calibrated_ms" in r]
    if cal:
        lines += ["", "Calibrated on each command's ideal (the other strategies only): mean "
                  f"{statistics.mean(cal):.1f}%, median {statistics.median(cal):.1f}%, "
                  f"{sum(e <= 5 for e in cal)} of {len(cal)} within 5%."]
    lines += ["", "## Collectives", "",
              "Measured: GPU time between the marks around each collective (median ms); "
              "predicted: the simulator's time for the same stage (measured / predicted).",
              "", "| workload | strategy | " + " | ".join(COMM) + " |",
              "|---|---|" + "---:|" * len(COMM)]
    for r in rs:
        lines.append(f"| {r['pipeline']} b{r['batch']} x{r['gpus']} | {r['strategy']} | "
                     + " | ".join(f"{r['comm'][s]:.3f} / {r['comm_pred'].get(s, 0.0):.3f}"
                                  for s in COMM) + " |")
    lines += ["", "## PGAS-style embedding exchange (simulated only)", "",
              "The simulator's alternative to the two embedding all-to-alls: one-sided "
              "puts issued during the lookup (`--embedding-comm pgas`). What it predicts "
              "for `ideal`, next to what the collectives measured:", "",
              "| workload | measured emb all-to-alls fwd + bwd | predicted collectives | "
              "predicted PGAS exposed | predicted iteration: collectives / PGAS | "
              "predicted saving |", "|---|---:|---:|---:|---:|---:|"]
    for r in rs:
        if "pgas_ms" not in r:
            continue
        measured = r["comm"]["emb_a2a_fwd"] + r["comm"]["emb_a2a_bwd"]
        coll = r["comm_pred"].get("emb_a2a_fwd", 0) + r["comm_pred"].get("emb_a2a_bwd", 0)
        pgas = r["pgas_comm"].get("emb_a2a_fwd", 0) + r["pgas_comm"].get("emb_a2a_bwd", 0)
        saving = r["predicted_ms"] - r["pgas_ms"]
        lines.append(f"| {r['pipeline']} b{r['batch']} x{r['gpus']} | {measured:.3f} ms | "
                     f"{coll:.3f} ms | {pgas:.3f} ms | {r['predicted_ms']:.3f} / "
                     f"{r['pgas_ms']:.3f} ms | {saving:.3f} ms "
                     f"({100 * saving / r['predicted_ms']:.1f}%) |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return render_main(argv, __doc__, RAW, OUT, "an existing execute_multigpu_*.json of "
                       "bench/execute_gpu.py --matrix multigpu", lambda raw: render(rows(raw)))


if __name__ == "__main__":
    raise SystemExit(main())
