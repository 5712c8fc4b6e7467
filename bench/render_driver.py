"""The executor's per-batch host calls made through the CUDA driver (backend/driver.py)
against PyTorch's copies and cuda.core's launches ("+core"), measured in the same rounds:
each strategy's median iteration over its "+core" twin's of the same round, and, from
bench/host_breakdown.py's runs, each host call's median time both ways. Writes
bench/results/driver_h200.md.

    python bench/render_driver.py [RAW.json ...] [--breakdown B.json ...] [-o OUT.md]

By default every bench/results/raw/execute_*.json that ran a "+core" case, and every
bench/results/raw/host_breakdown_*.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

RAW = ROOT / "bench/results/raw"
OUT = ROOT / "bench/results/driver_h200.md"
TWIN = "+core"
LAUNCH_ONLY = "c736e4a"
CALLS = ("Lane.stage", "Lane.launch", "Lane.assemble", "Lane.finish", "BoundLaunch.__call__",
         "DeviceAssembler.start", "DeviceState._scan", "Trainer.step")


def pairs(raw: list[Path]) -> list[dict]:
    """Every (run, pipeline, batch, round, strategy) that ran beside its "+core" twin."""
    out = []
    for path in raw:
        cases = measured_cases(path)[0]
        ms = {(r["pipeline"], r["batch"], r.get("repeat", 0), r["strategy"]):
              r["measurement"]["iteration"]["median_ms"] for r in cases}
        commit = next((r["measurement"].get("git_commit") for r in cases), None) or "-"
        for (p, b, rnd, s), twin in ms.items():
            if s.endswith(TWIN) and (p, b, rnd, s.removesuffix(TWIN)) in ms:
                out.append({"run": path.name, "commit": commit[:7], "pipeline": p,
                            "batch": b, "round": rnd, "strategy": s.removesuffix(TWIN),
                            "driver_ms": ms[(p, b, rnd, s.removesuffix(TWIN))],
                            "core_ms": twin})
    return out


def breakdown_rows(files: list[Path]) -> list[str]:
    """A table per host_breakdown file: each call's median ms, driver / "+core"."""
    lines = []
    for path in files:
        data = json.loads(path.read_text())
        cases = {r["strategy"]: r["calls"] for r in data["results"]}
        twins = [s for s in cases if s + TWIN in cases]
        if not twins:
            continue
        lines += ["", f"`{data['command']}` ({path.name}): median host ms of one call, "
                  "driver / +core, and calls per step", "",
                  "| call | " + " | ".join(twins) + " |", "|---|" + "---:|" * len(twins)]
        for call in CALLS:
            cells = []
            for s in twins:
                a, b = cases[s].get(call), cases[s + TWIN].get(call)
                cells.append("-" if a is None or b is None else
                             f"{a['median_ms']:.4f} / {b['median_ms']:.4f} "
                             f"(x{a['calls_per_step']:g})")
            lines.append(f"| {call} | " + " | ".join(cells) + " |")
    return lines


def render(rows: list[dict], raw: list[Path], breakdowns: list[Path]) -> str:
    lines = ["# Per-batch host calls through the CUDA driver, against PyTorch and cuda.core",
             "", f"Made by `python bench/render_driver.py` from {len(raw)} raw files and "
             f"{len(breakdowns)} host breakdowns. Ratio: a strategy's median iteration "
             "with the driver's calls (the default) over the same strategy's with "
             "\"+core\" in the same round and process (below 1: the driver's is faster). "
             f"At commit {LAUNCH_ONLY} \"+core\" changed the launches only (the copies went "
             "through PyTorch both ways); from 4bec2ee on, the copies too.", ""]
    if rows:
        ratios = [r["driver_ms"] / r["core_ms"] for r in rows]
        lines.append(f"{len(ratios)} paired rounds: ratio median "
                     f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-"
                     f"{max(ratios):.3f}; the driver's faster in "
                     f"{sum(x < 1 for x in ratios)}, by more than 1% in "
                     f"{sum(x < 0.99 for x in ratios)}; slower by more than 1% in "
                     f"{sum(x > 1.01 for x in ratios)}.")
        lines += ["", "| run | commit | pipeline | batch | round | strategy | driver ms | "
                  "+core ms | ratio |", "|---|---|---|---:|---:|---|---:|---:|---:|"]
        lines += [f"| {r['run']} | {r['commit']} | {r['pipeline']} | {r['batch']} | {r['round']} | "
                  f"{r['strategy']} | {r['driver_ms']:.3f} | {r['core_ms']:.3f} | "
                  f"{r['driver_ms'] / r['core_ms']:.3f} |" for r in rows]
    else:
        lines.append("No round ran a strategy beside its \"+core\" twin.")
    return "\n".join(lines + breakdown_rows(breakdowns)) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", nargs="*", type=Path)
    ap.add_argument("--breakdown", nargs="*", type=Path)
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    raw = args.raw or [p for p in sorted(RAW.glob("execute_*.json"))
                       if TWIN in p.read_text()]
    breakdowns = sorted(RAW.glob("host_breakdown_*.json")) if args.breakdown is None \
        else args.breakdown
    for p in [*raw, *breakdowns]:
        if not p.is_file():
            ap.error(f"{p}: not a file (bench/execute_gpu.py's or bench/host_breakdown.py's "
                     "raw output)")
    write_atomic(args.out, render(pairs(raw), raw, breakdowns))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
