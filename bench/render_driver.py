"""The executor's per-batch host calls made through the CUDA driver (backend/driver.py)
against PyTorch's copies and cuda.core's launches ("+core"), measured in the same rounds:
each strategy's median iteration over its "+core" twin's of the same round, and, from
bench/host_breakdown.py's runs, each host call's median time both ways. Writes
bench/results/driver_h200.md.

    python bench/render_driver.py [RAW.json ...] [-o OUT.md]

RAW: bench/execute_gpu.py's files (a list of cases) and bench/host_breakdown.py's (an
object with "results"), told apart by their content. By default every
bench/results/raw/execute_*.json (those without a "+core" case add nothing) and every
bench/results/raw/host_breakdown_*.json.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases, render_main  # noqa: E402

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


def render(rows: list[dict], runs: list[str], breakdowns: list[Path]) -> str:
    lines = ["# Per-batch host calls through the CUDA driver, against PyTorch and cuda.core",
             "", f"Made by `python bench/render_driver.py` from {len(runs)} runs with "
             "\"+core\" cases and "
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


def render_files(files: list[Path]) -> str:
    """The report over execute files and host breakdowns, told apart by their content;
    execute files without a "+core" case add nothing."""
    docs = {p: json.loads(p.read_text()) for p in files}
    for p, doc in docs.items():
        if not isinstance(doc, list) and not (isinstance(doc, dict) and "results" in doc):
            raise SystemExit(f"raw = {str(p)!r}: neither a list of cases (bench/"
                             "execute_gpu.py) nor an object with \"results\" "
                             "(bench/host_breakdown.py)")
    breakdowns = [p for p in files if isinstance(docs[p], dict)]
    raw = [p for p in files if p not in breakdowns]
    rows = pairs(raw)
    return render(rows, sorted({r["run"] for r in rows}), breakdowns)


def main(argv: list[str] | None = None) -> int:
    default = sorted(RAW.glob("execute_*.json")) + sorted(RAW.glob("host_breakdown_*.json"))
    return render_main(argv, __doc__, default, OUT, "bench/execute_gpu.py's or "
                       "bench/host_breakdown.py's raw output", render_files)


if __name__ == "__main__":
    raise SystemExit(main())
