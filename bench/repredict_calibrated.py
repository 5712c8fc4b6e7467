"""Every executed case predicted twice by today's model: as is, and calibrated by the
ideal its own command measured for the same model, batch and GPU count (sim.calibrate,
costmodel/calibration.py: every duration scaled by the measured ideal over the predicted
one), as `corun plan --calibration` would have predicted it had the user measured ideal
on that machine first. Cases without an ideal of their workload in the same command are
left out, and so are the ideal cases (calibrated, they predict their own measurement).
Mean iterations are compared, as the throughputs count them (since session 57; the
median steps before).
Writes bench/results/repredict_calibrated_h200.md from every run and their own ideals;
named runs or --calibration print, or go to -o OUT.md.

    python bench/repredict_calibrated.py [RAW.json ...] [-o OUT.md]   (default: every run)
    python bench/repredict_calibrated.py RAW.json ... --calibration IDEAL.json ... -o OUT.md
        (held out: each workload calibrated by an ideal another command measured)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import (  # noqa: E402
    graphed,
    measured_cases,
    measured_scenario,
    publish,
    require_raw,
)
from bench.repredict import every_raw, summary  # noqa: E402
from reports.rounds import record_iteration_ms  # noqa: E402
from spec.serde import stored_name  # noqa: E402

OUT = ROOT / "bench/results/repredict_calibrated_h200.md"


def workload(m: dict) -> tuple:
    """What a calibration applies to (Calibration.applies_to's fields)."""
    return (m["model"], m["batch_per_gpu"], m["gpu_count"], graphed(m))


def calibrations(cases: list[dict], source: str) -> dict[tuple, object]:
    """Each workload's calibration in one command, from its ideal cases (rounds: their
    median)."""
    from costmodel.calibration import from_measurement, median_of
    from spec import Measurement
    from spec.serde import loads

    by: dict[tuple, list] = defaultdict(list)
    for r in cases:
        m = r["measurement"]
        if r["strategy"] == "ideal" and m["strategy"] == "ideal":
            by[workload(m)].append(from_measurement(loads(Measurement, m), source))
    return {k: median_of(v) for k, v in by.items()}


def rows(raw: list[Path], skipped: dict[str, str], given: dict | None = None) -> list[dict]:
    """One row per non-ideal case with an ideal of its workload in its command, or in
    `given` (workload -> calibration: ideals measured apart, by other commands)."""
    from sim import calibrate, simulate

    out = []
    for path in raw:
        source = stored_name(path)
        try:
            cases = measured_cases(path)[0]
            cals = calibrations(cases, source) if given is None else given
            mine = []
            for r in cases:
                m = r["measurement"]
                cal = cals.get(workload(m))
                if r["strategy"].startswith("ideal") or cal is None:
                    continue
                sc = measured_scenario(m, r["strategy"])
                mine.append({"source": source, "model": m["model"], "batch": r["batch"],
                             "gpus": m["gpu_count"], "strategy": r["strategy"],
                             "measured_ms": record_iteration_ms(m),
                             "plain_ms": simulate(sc).prediction.mean_iteration_ms,
                             "gpu_side_ms": simulate(replace(sc, host_thread=False)
                                                     ).prediction.mean_iteration_ms,
                             "calibrated_ms": simulate(calibrate(sc, cal)
                                                       ).prediction.mean_iteration_ms})
        except Exception as e:  # noqa: BLE001 - any failure names the run
            skipped[path.name] = f"{type(e).__name__}: {str(e)[:120]}"
            continue
        out += mine
    return out


def error(r: dict, key: str) -> float:
    return 100 * abs(r[key] - r["measured_ms"]) / r["measured_ms"]


TIE = 1e-4
"""Predictions closer than this share tie; the planner breaks ties by the GPU side (the
plan simulated without the host thread, planner/judge.py `gpu_side_ms`)."""


def regrets(rs: list[dict]) -> list[float]:
    """Per command and workload of two strategies or more (medians over rounds): how much
    slower, measured, the strategy the model ranks first ran than the measured fastest
    (%; 0 where the model ranked it first). Calibration scales a workload's predictions
    alike, so these hold for both."""
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in rs:
        groups[(r["source"], r["model"], r["batch"], r["gpus"])][r["strategy"]].append(r)
    out = []
    for by in groups.values():
        if len(by) < 2:
            continue
        med = {k: {s: statistics.median(x[k] for x in v) for s, v in by.items()}
               for k in ("plain_ms", "gpu_side_ms", "measured_ms")}
        best = min(med["plain_ms"].values())
        tied = [s for s, p in med["plain_ms"].items() if p <= best * (1 + TIE)]
        first = min(tied, key=med["gpu_side_ms"].get)
        out.append(100 * (med["measured_ms"][first] / min(med["measured_ms"].values()) - 1))
    return out


def render(rs: list[dict], command: str, skipped: dict[str, str], held_out: bool) -> str:
    from sim.simulate import git_commit

    def line(title: str, sub: list[dict]) -> str:
        return (f"| {title} | {len(sub)} | {summary([error(r, 'plain_ms') for r in sub])} | "
                f"{summary([error(r, 'calibrated_ms') for r in sub])} |")

    title = "an ideal measured apart" if held_out else "their command's ideal"
    lines = [f"# Executed cases predicted as is and calibrated by {title}", "",
             f"Made by `{command}` at commit {git_commit()}. Each non-ideal case is "
             "simulated as `corun plan` simulates a candidate (learned H200 model, host "
             "thread), once as is and once calibrated by "
             + ("the ideal measured apart, by another command (--calibration), "
                if held_out else "the ideal its own command measured ")
             + "for the same model, batch and GPU count (`sim.calibrate`: every "
             "duration times the measured ideal iteration over the predicted one, medians "
             "over rounds). Errors are absolute, of the median iteration. One factor per "
             "workload cannot change which strategy is predicted fastest.", "",
             "| cases | n | as is | calibrated |", "|---|---|---|---|", line("all", rs)]
    for b in sorted({r["batch"] for r in rs}):
        lines.append(line(f"batch {b}", [r for r in rs if r["batch"] == b]))
    for g in sorted({r["gpus"] for r in rs}):
        lines.append(line(f"{g} GPU(s)", [r for r in rs if r["gpus"] == g]))
    reg = regrets(rs)
    lines += ["", f"Ranked first by the model, ties broken as the planner breaks them: the "
              f"measured fastest strategy in {sum(x == 0 for x in reg)} of {len(reg)} "
              "workloads of two strategies or more; the ranked-first ran within 1% of the "
              f"fastest in {sum(x <= 1 for x in reg)}, within 2% in "
              f"{sum(x <= 2 for x in reg)} (median {statistics.median(reg):.2f}% slower, "
              f"worst {max(reg):.1f}%).", ""]
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
    ap.add_argument("-o", "--out", type=Path,
                    help=f"default: {OUT.name} with every run and their own ideals, else "
                    "print only")
    ap.add_argument("--calibration", nargs="+", type=Path, metavar="IDEAL.json",
                    help="calibrate by these measurements of ideal (corun execute "
                    "--strategy ideal), each for its workload, not by the runs' own ideal")
    args = ap.parse_args(argv)
    require_raw(ap, args.raw)
    skipped: dict[str, str] = {}
    given = None
    if args.calibration:
        from costmodel.calibration import load_calibration

        cals = [load_calibration([p]) for p in args.calibration]
        given = {(c.model, c.batch_per_gpu, c.gpu_count, c.cuda_graphs): c for c in cals}
    rs = rows(args.raw or every_raw(), skipped, given)
    if not rs:
        ap.error("raw: no case has an ideal of its workload in its command")
    command = " ".join(["python bench/repredict_calibrated.py",
                        *(argv if argv is not None else sys.argv[1:])])
    text = render(rs, command, skipped, given is not None)
    publish(text, args.out, bool(args.raw) or given is not None, OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
