"""Offline: should a large batch assembly pause the stage already running when it starts?

The simulator holds a stage that starts while a large assembly runs (sim.scenario's
ASSEMBLY_HOLDS) and lets one already running keep the kernel's rates. On heavy-rehash's
thin kernels carried into the next step (eager b32768, 132-148 blocks), emb_fwd took
+0.35-0.37 ms, the batch's assembly alone (0.372 ms), as if paused
(bench/results/rehash_h200.md, run 7). This predicts every executed case both ways, the
committed rule and "pause" (the large assembly holds the running stage too), and prints
the errors, the commands whose predicted best was the measured best, and the runs that
moved most.

    python bench/assembly_pause_experiment.py [-o OUT.md]

writes bench/results/assembly_pause_experiment.md by default.
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
from bench.repredict import every_raw, ranking, rows  # noqa: E402
from sim.simulate import git_commit  # noqa: E402

COMMITTED = scenario._assembly_run
OUT = ROOT / "bench/results/assembly_pause_experiment.md"
SHOWN = 12
"""Runs listed at each end of the moved table."""


def pausing_assembly_run(last: scenario.KernelRun, batch_mb: float,
                         compared: bool) -> scenario.KernelRun:
    """The committed assembly, with a large one's holds on the stage running when it
    starts as well as on those that start beside it."""
    run = COMMITTED(last, batch_mb, compared)
    if run.alone_ms < scenario.ASSEMBLY_HOLD_MIN_MS:
        return run
    return scenario.KernelRun(run.name, run.release_pos, run.alone_ms, run.carried,
                              run.carried)


def predicted(way) -> list[dict]:
    """Every executed case's row (bench/repredict.py's) with `way` as the assembly."""
    from bench.vocab_probe import registered

    scenario._assembly_run = way
    try:
        with registered():
            return rows(every_raw(), {})
    finally:
        scenario._assembly_run = COMMITTED


def summary(rs: list[dict]) -> list[str]:
    """Errors and ranking, for all cases and the heavy models'."""
    out = []
    for what, mine in (("all", rs), ("heavy models", [r for r in rs
                                                      if r["model"].startswith("heavy")])):
        rk = ranking(mine)
        out.append(f"{what}: {len(mine)} cases, mean error "
                   f"{statistics.mean(abs(r['error_pct']) for r in mine):.2f}%, "
                   f"{sum(abs(r['error_pct']) <= 5 for r in mine)} within 5%; predicted "
                   f"best the measured best in {sum(v[0] for v in rk.values())} of {len(rk)} "
                   f"commands, mean regret {statistics.mean(v[1] for v in rk.values()):.2f}%")
    return out


def moved(base: list[dict], other: list[dict]) -> list[str]:
    """Per run whose cases moved, cases within 5% and mean error both ways, worst first."""
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for a, b in zip(base, other):
        if abs(abs(a["error_pct"]) - abs(b["error_pct"])) > 0.01:
            by[a["source"]].append((abs(a["error_pct"]), abs(b["error_pct"])))
    order = sorted(by, key=lambda s: statistics.mean(b - a for a, b in by[s]))
    lines = ["| run | cases moved | within 5%: committed -> pause | mean error |",
             "|---|---:|---:|---:|"]
    for s in order[-SHOWN:][::-1] + order[:SHOWN]:
        v = by[s]
        lines.append(f"| {s} | {len(v)} | {sum(a <= 5 for a, _ in v)} -> "
                     f"{sum(b <= 5 for _, b in v)} | {statistics.mean(a for a, _ in v):.2f}% -> "
                     f"{statistics.mean(b for _, b in v):.2f}% |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, help=f"the Markdown's path (default: {OUT})")
    args = ap.parse_args(argv)
    base, pause = predicted(COMMITTED), predicted(pausing_assembly_run)
    if [(r["source"], r["strategy"]) for r in base] != \
            [(r["source"], r["strategy"]) for r in pause]:
        raise SystemExit("the two ways predicted different cases")
    lines = ["# A large assembly pausing the running stage: an experiment", "",
             f"Made by `python bench/assembly_pause_experiment.py` at commit {git_commit()}.",
             "", "Committed (the running stage keeps the kernel's rates):", "",
             *[f"- {x}" for x in summary(base)], "",
             "Pause (the running stage waits for the assembly too):", "",
             *[f"- {x}" for x in summary(pause)], "",
             f"Runs whose cases moved, the {SHOWN} made worst then the {SHOWN} made best:", "",
             *moved(base, pause)]
    publish("\n".join(lines) + "\n", args.out, False, OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
