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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sim.scenario as scenario  # noqa: E402
from bench.render_execute import publish  # noqa: E402
from bench.repredict import compare_ways, every_raw, rows  # noqa: E402
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
    lines += compare_ways(result, "rule", ", as a rate, then in time", ("as a rate", "in time"))
    publish("\n".join(lines) + "\n", args.out, True, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
