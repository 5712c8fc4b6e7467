"""Every executed case predicted twice by today's model: as is, and calibrated by the
ideal step its own command measured (costmodel/calibration.py: the stage times of
`ideal` in place of the cost model's), as `corun plan --calibration` would have
predicted it had the user measured ideal on that machine first. Cases without an ideal
of their workload in the same command are left out, and so are the ideal cases (their
calibrated prediction is their own measurement). Writes
bench/results/repredict_calibrated_h200.md.

    python bench/repredict_calibrated.py [RAW.json ...] [-o OUT.md]   (default: every run)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import measured_cases, measured_scenario  # noqa: E402
from bench.repredict import every_raw, summary  # noqa: E402
from spec.serde import stored_path, write_atomic  # noqa: E402

OUT = ROOT / "bench/results/repredict_calibrated_h200.md"


def workload(m: dict) -> tuple:
    from bench.render_execute import graphed

    return (m["model"], m["batch_per_gpu"], m["gpu_count"], graphed(m))


@dataclass(frozen=True)
class Ideal:
    """A command's ideal of one workload: the calibration it gives, and its measured
    and predicted iteration (medians over rounds) for the scaled prediction."""

    calibration: object
    measured_ms: float
    predicted_ms: float
    calibrated_ms: float
    """Its prediction calibrated by itself: the host model's part of the gap left."""


def ideals(cases: list[dict], source: str) -> dict[tuple, Ideal]:
    """Each workload's Ideal in one command (rounds: the median of each stage)."""
    from costmodel.calibration import from_measurement, median_of
    from sim import simulate
    from spec import Measurement
    from spec.serde import loads

    by: dict[tuple, list] = defaultdict(list)
    for r in cases:
        if r["strategy"] == "ideal" and r["measurement"]["strategy"] == "ideal":
            by[workload(r["measurement"])].append(r["measurement"])
    out = {}
    for k, ms in by.items():
        cal = median_of([from_measurement(loads(Measurement, m), source) for m in ms])
        sc = measured_scenario(ms[0], "ideal")
        out[k] = Ideal(cal, statistics.median(m["iteration"]["median_ms"] for m in ms),
                       simulate(sc).prediction.iteration_time_ms,
                       simulate(replace(sc, calibration=cal)).prediction.iteration_time_ms)
    return out


def rows(raw: list[Path], skipped: dict[str, str]) -> list[dict]:
    """One row per non-ideal case with an ideal of its workload in its command."""
    from sim import simulate

    out = []
    for path in raw:
        source = path.name.removesuffix(".gz")
        try:
            cases = measured_cases(path)[0]
            known = ideals(cases, source)
            mine = []
            for r in cases:
                m = r["measurement"]
                ideal = known.get(workload(m))
                if r["strategy"].startswith("ideal") or ideal is None:
                    continue
                sc = measured_scenario(m, r["strategy"])
                cal = replace(sc, calibration=ideal.calibration)
                plain, calibrated, plain_gpu, calibrated_gpu = (
                    simulate(x).prediction.iteration_time_ms
                    for x in (sc, cal, replace(sc, host_thread=False),
                              replace(cal, host_thread=False)))
                mine.append({"source": source, "model": m["model"], "batch": r["batch"],
                             "gpus": m["gpu_count"], "strategy": r["strategy"],
                             "measured_ms": m["iteration"]["median_ms"], "plain_ms": plain,
                             "scaled_ms": plain * ideal.measured_ms / ideal.predicted_ms,
                             "calibrated_ms": calibrated, "plain_gpu_ms": plain_gpu,
                             "calibrated_gpu_ms": calibrated_gpu,
                             "both_ms": calibrated * ideal.measured_ms / ideal.calibrated_ms})
        except Exception as e:  # noqa: BLE001 - any failure names the run
            skipped[path.name] = f"{type(e).__name__}: {str(e)[:120]}"
            continue
        out += mine
    return out


def error(r: dict, key: str) -> float:
    return 100 * abs(r[key] - r["measured_ms"]) / r["measured_ms"]


TIE = 1e-4
"""Predictions closer than this share are a tie, which the planner breaks by the plans'
GPU side (simulated without the host thread: planner/judge.py, `gpu_side_ms`)."""


def ranking(rs: list[dict], key: str) -> tuple[int, int]:
    """(workloads whose measured fastest strategy the planner would rank first, workloads
    of two strategies or more): per command and workload, medians over rounds; ties
    within TIE go to the faster GPU side, as the planner breaks them."""
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in rs:
        groups[(r["source"], r["model"], r["batch"], r["gpus"])][r["strategy"]].append(r)
    gpu_key = key.replace("_ms", "_gpu_ms")
    hits = total = 0
    for by in groups.values():
        if len(by) < 2:
            continue
        total += 1
        measured = {s: statistics.median(x["measured_ms"] for x in v) for s, v in by.items()}
        predicted = {s: statistics.median(x[key] for x in v) for s, v in by.items()}
        best = min(predicted.values())
        tied = [s for s, p in predicted.items() if p <= best * (1 + TIE)]
        first = min(tied, key=lambda s: statistics.median(x[gpu_key] for x in by[s]))
        hits += first == min(measured, key=measured.get)
    return hits, total


def render(rs: list[dict], command: str, skipped: dict[str, str]) -> str:
    from sim.simulate import git_commit

    def line(title: str, sub: list[dict]) -> str:
        return (f"| {title} | {len(sub)} | {summary([error(r, 'plain_ms') for r in sub])} | "
                f"{summary([error(r, 'scaled_ms') for r in sub])} | "
                f"{summary([error(r, 'calibrated_ms') for r in sub])} | "
                f"{summary([error(r, 'both_ms') for r in sub])} |")

    rank = {k: ranking(rs, k) for k in ("plain_ms", "calibrated_ms")}
    lines = ["# Executed cases predicted as is and calibrated by their command's ideal", "",
             f"Made by `{command}` at commit {git_commit()}. Each non-ideal case is "
             "simulated as `corun plan` simulates a candidate (learned H200 model, host "
             "thread), once as is and once with the ideal its own command measured for "
             "the same model, batch and GPU count as its calibration (`corun plan "
             "--calibration`): the stage medians, and the host step where the host did not "
             "wait for the GPU. Errors are absolute, of the median iteration.", "",
             "*Scaled*: the prediction as is times the workload's measured ideal over its "
             "predicted ideal, one factor for the whole step (it cannot change a "
             "ranking).", "",
             "| cases | n | as is | scaled | calibrated | calibrated, then scaled |",
             "|---|---:|---|---|---|---|",
             line("all", rs)]
    for b in sorted({r["batch"] for r in rs}):
        lines.append(line(f"batch {b}", [r for r in rs if r["batch"] == b]))
    for g in sorted({r["gpus"] for r in rs}):
        lines.append(line(f"{g} GPU(s)", [r for r in rs if r["gpus"] == g]))
    lines += ["", "The planner would rank the measured fastest strategy of a command's "
              "workload (medians over rounds) first, ties broken by the GPU side, in "
              f"{rank['plain_ms'][0]} of {rank['plain_ms'][1]} workloads as is (scaled the "
              f"same), {rank['calibrated_ms'][0]} calibrated (then scaled the same).", ""]
    if skipped:
        lines += [f"Not simulated today ({len(skipped)} runs):", ""]
        lines += [f"- {name}: {why}" for name, why in skipped.items()] + [""]
    by_run: dict[str, list[dict]] = defaultdict(list)
    for r in rs:
        by_run[r["source"]].append(r)
    lines += ["| run | cases | mean error as is | calibrated |", "|---|---:|---:|---:|"]
    for src, sub in by_run.items():
        lines.append(f"| {src} | {len(sub)} | "
                     f"{statistics.mean(error(r, 'plain_ms') for r in sub):.2f}% | "
                     f"{statistics.mean(error(r, 'calibrated_ms') for r in sub):.2f}% |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", nargs="*", type=Path, help="default: every run under "
                    "bench/results/raw")
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    missing = [str(p) for p in args.raw if not stored_path(p).is_file()]
    if missing:
        ap.error(f"raw = {missing[0]!r}: an existing execute_*.json of bench/execute_gpu.py")
    skipped: dict[str, str] = {}
    rs = rows(args.raw or every_raw(), skipped)
    if not rs:
        ap.error("raw: no case has an ideal of its workload in its command")
    command = " ".join(["python bench/repredict_calibrated.py",
                        *(argv if argv is not None else sys.argv[1:])])
    text = render(rs, command, skipped)
    write_atomic(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
