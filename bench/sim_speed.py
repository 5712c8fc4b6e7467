"""Simulator speed: simulated iterations and SimPy events per second, one core.

Run: taskset -c 0 python bench/sim_speed.py [--repeats 7] (pinned to one core)
Reports the median over repeats of (iterations simulated / wall time of simulate()),
compile included, for 1, 4 and 8 H200 GPUs with the kaggle and wide-4x pipelines.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.sim import Scenario, Strategy, StrategyKind, simulate
from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

from corun import spec

CASES = [(gpus, pipe) for pipe in ("kaggle", "wide-4x") for gpus in (1, 4, 8)]


def measure(gpus: int, pipe: str, strategy: str, iterations: int, repeats: int) -> dict:
    hw = spec.hardware_preset("h200", gpus)
    model = spec.model_preset(spec.DEFAULT_MODEL_FOR[pipe])
    p = spec.pipeline_preset(pipe)
    sc = Scenario(
        hw,
        model,
        p,
        Strategy(StrategyKind(strategy)),
        iterations=iterations,
        warmup=0,
        jitter_cv=0.05,
    )
    its, evs = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = simulate(sc, commit="bench")
        dt = time.perf_counter() - t0
        its.append(iterations / dt)
        evs.append(r.log.events / dt)
    return {
        "gpus": gpus,
        "pipeline": pipe,
        "strategy": strategy,
        "iterations": iterations,
        "iterations_per_s_median": statistics.median(its),
        "events_per_s_median": statistics.median(evs),
        "iterations_per_s_min": min(its),
        "iterations_per_s_max": max(its),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("-o", "--output", required=True, help="the JSON to write")
    args = ap.parse_args(argv)
    rows = [
        measure(g, p, s, args.iterations, args.repeats)
        for g, p in CASES
        for s in ("ideal", "gpu-overlap")
    ]
    doc = {
        "command": "taskset -c 0 python bench/sim_speed.py",
        "commit": git_commit(),
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "repeats": args.repeats,
        "results": rows,
    }
    write_atomic(args.output, json.dumps(doc, indent=1) + "\n")
    print(f"{'gpus':>4} {'pipeline':<8} {'strategy':<12} {'iter/s':>9} {'events/s':>10}")
    for r in rows:
        print(
            f"{r['gpus']:>4} {r['pipeline']:<8} {r['strategy']:<12} "
            f"{r['iterations_per_s_median']:>9.0f} {r['events_per_s_median']:>10.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
