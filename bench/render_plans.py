"""Planned strategies executed on the H200 against the predictions they were chosen on:
bench/results/raw/execute_plans_run5.json (bench/execute_gpu.py --matrix plans) next to
bench/plans/<pipeline>-b<batch>/prediction-<strategy>.json (bash bench/plans/make.sh, the
learned H200 model and the host thread). Writes bench/results/plans_h200.md.

    python bench/render_plans.py [RAW.json ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAW = [ROOT / "bench/results/raw/execute_plans_run5.json"]
OUT = ROOT / "bench/results/plans_h200.md"


def rows(raw: list[Path]) -> list[dict]:
    out = []
    for path in raw:
        runs = [r for r in json.loads(path.read_text()) if r.get("measurement")]
        ideal = {(r["pipeline"], r["batch"]): r["measurement"]["iteration"]["median_ms"]
                 for r in runs if r["strategy"] == "ideal"}
        for r in runs:
            m, key = r["measurement"], (r["pipeline"], r["batch"])
            pred = ROOT / f"bench/plans/{key[0]}-b{key[1]}/prediction-{r['strategy']}.json"
            p = json.loads(pred.read_text())["iteration_time_ms"]
            ms = m["iteration"]["median_ms"]
            out.append({"pipeline": key[0], "batch": key[1], "strategy": r["strategy"],
                        "measured_ms": ms, "of_ideal_pct": 100 * ideal[key] / ms,
                        "predicted_ms": p, "error_pct": 100 * (p - ms) / ms,
                        "host": {k: v["median_ms"] for k, v in m["host"].items()},
                        "command": m["command"], "source": path.name})
    return out


def render(rs: list[dict]) -> str:
    lines = ["# Planned strategies on the H200: measured against predicted", "",
             "Made by `python bench/render_plans.py` from "
             + ", ".join(sorted({f"`bench/results/raw/{r['source']}`" for r in rs}))
             + f"; measured with `{rs[0]['command']}` (200 timed iterations after 20, every "
             "batch's sampled rows checked). Predictions: `bash bench/plans/make.sh` "
             "(learned H200 model + host thread).", "",
             "| workload | strategy | measured ms | of measured ideal | predicted ms | "
             "error | host ms: step / wait / finish / check |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in rs:
        h = r["host"]
        lines.append(f"| {r['pipeline']} b{r['batch']} | {r['strategy']} | "
                     f"{r['measured_ms']:.3f} | {r['of_ideal_pct']:.1f}% | "
                     f"{r['predicted_ms']:.3f} | {r['error_pct']:+.1f}% | "
                     + " / ".join(f"{h.get(k, 0):.2f}" for k in ("step", "wait", "finish",
                                                                  "check")) + " |")
    errs = [abs(r["error_pct"]) for r in rs]
    lines += ["", f"Iteration-time error: mean {statistics.mean(errs):.1f}%, median "
              f"{statistics.median(errs):.1f}%, {sum(e <= 5 for e in errs)} of {len(errs)} "
              "within 5%.", ""]
    best = {}
    for r in rs:
        w = (r["pipeline"], r["batch"])
        if r["strategy"] != "ideal":
            best.setdefault(w, []).append(r)
    lines.append("| workload | measured best (non-ideal) | planner's corun plan |")
    lines.append("|---|---|---|")
    for (p, b), cand in best.items():
        top = min(cand, key=lambda r: r["measured_ms"])
        corun = next((r for r in cand if r["strategy"] == "corun"), None)
        lines.append(f"| {p} b{b} | {top['strategy']} ({top['of_ideal_pct']:.1f}%) | "
                     + (f"{corun['of_ideal_pct']:.1f}%" if corun else "-") + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    raw = [Path(a) for a in argv] or RAW
    text = render(rows(raw))
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(OUT)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
