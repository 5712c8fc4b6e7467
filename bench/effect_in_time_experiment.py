"""Offline: a graphed stage that keeps its pace beside a kernel (sim.scenario._effect)
hands the kernel the stage's profiled delay. Taken as a rate, kernel * stage, or in time,
kernel * (2 - 1 / stage) (the kernel beside the stage as long as in the profile plus the
stage's delay): every executed case and `corun tune` run predicted again both ways, the
errors by model, and per command whether the plan predicted best was the measured best.

    python bench/effect_in_time_experiment.py [-o OUT.md]

Runs every raw run twice (about 10 minutes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sim.scenario as scenario  # noqa: E402
from bench.render_execute import publish  # noqa: E402
from bench.repredict import every_raw, rows, summary  # noqa: E402
from sim.simulate import git_commit  # noqa: E402

OUT = ROOT / "bench/results/effect_in_time_experiment.md"
IN_TIME = scenario._effect


def as_rate(profiled, work, priority, outlasts=True):
    """The rule before 2026-12-03: the kernel's factor times the stage's."""
    stage, kernel = profiled
    if work.graphed and priority and outlasts:
        return 1.0, kernel * stage
    return stage, kernel


VARIANTS = {"as a rate (kernel * stage)": as_rate, "in time (committed)": IN_TIME}


def ranking(rs: list[dict]) -> dict[tuple, tuple[bool, float, str, str]]:
    """Per command (run, model, batch) with two or more strategies besides ideal: whether
    the one predicted fastest (median over its rounds) was the measured fastest, its
    regret in %, and the two strategies' names."""
    by: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rs:
        if r["strategy"] != "ideal":
            by[r["source"], r["model"], r["batch"]][r["strategy"]].append(
                (r["measured_ms"], r["predicted_ms"]))
    out = {}
    for key, strategies in by.items():
        if len(strategies) < 2:
            continue
        med = {s: (statistics.median(m for m, _ in v), statistics.median(p for _, p in v))
               for s, v in strategies.items()}
        best_p = min(med, key=lambda s: med[s][1])
        best_m = min(med, key=lambda s: med[s][0])
        out[key] = (best_p == best_m, 100 * (med[best_p][0] / med[best_m][0] - 1),
                    best_p, best_m)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from bench.vocab_probe import registered

    raw = every_raw()
    result = {}
    skipped: dict[str, str] = {}  # the runs today's code cannot simulate (the same each time)
    for name, rule in VARIANTS.items():
        scenario._effect = rule
        with registered():
            result[name] = rows(raw, skipped)
    scenario._effect = IN_TIME
    command = " ".join(["python bench/effect_in_time_experiment.py", *(argv or sys.argv[1:])])
    lines = ["# A stage's delay handed to the kernel: as a rate or in time", "",
             f"Made by `{command}` at commit {git_commit()}: every raw run under "
             f"bench/results/raw/ that today's code simulates ({len(raw) - len(skipped)} of "
             f"{len(raw)}), predicted with each rule of `sim.scenario._effect`.", ""]
    ranks = {name: ranking(rs) for name, rs in result.items()}
    models = sorted({r["model"] for rs in result.values() for r in rs})
    lines += ["| model | rule | iteration-time error | commands ranked right | "
              "mean regret |", "|---|---|---|---:|---:|"]
    for model in [None, *models]:
        for name, rs in result.items():
            mine = [r for r in rs if model is None or r["model"] == model]
            rk = [v for k, v in ranks[name].items() if model is None or k[1] == model]
            if not mine:
                continue
            regret = f"{statistics.mean(v[1] for v in rk):.2f}%" if rk else "-"
            errors = summary([abs(r["error_pct"]) for r in mine])
            lines.append(f"| {model or 'all'} | {name} | {errors} "
                         f"| {sum(v[0] for v in rk)} of {len(rk)} | {regret} |")
    a, b = (ranks[n] for n in VARIANTS)
    moved = sorted(k for k in a if a[k][:2] != b.get(k, a[k])[:2])
    lines += ["", f"Commands whose predicted best moved ({len(moved)}): predicted best "
              "(regret), as a rate, then in time; the measured best.", "",
              "| run | model | batch | as a rate | in time | measured best |",
              "|---|---|---:|---|---|---|"]
    lines += [f"| {k[0]} | {k[1]} | {k[2]} | {a[k][2]} ({a[k][1]:.1f}%) | "
              f"{b[k][2]} ({b[k][1]:.1f}%) | {a[k][3]} |" for k in moved]
    publish("\n".join(lines) + "\n", args.out, True, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
