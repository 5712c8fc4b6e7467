"""The local search against the exact MILP of fusion + schedule (one GPU), in simulation.

Run: python bench/milp_gap.py -o milp_gap.json
Both plans are judged by the same simulator. `search (MILP's decisions)` decides only what
the MILP decides (fusion and release stages; default launch shape, every GPU over its
local batch, training at high priority); `search` also tunes launch shapes, mapping and
stream priority, which the MILP does not model. The analytic cost model and the GPU side
alone (no host thread): the MILP's objective is the GPU schedule.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.costmodel import AnalyticCostModel
from corun.planner import LocalSearch, SimJudge
from corun.planner.milp import solve
from corun.sim import Scenario, Strategy, StrategyKind
from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

from corun import spec

CASES = ["kaggle", "terabyte", "wide-2x", "wide-4x", "multihot"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="the JSON to write")
    ap.add_argument("--time-limit", type=float, default=60.0, help="search seconds a case")
    args = ap.parse_args(argv)
    rows = []
    for pipe in CASES:
        model = spec.model_preset(spec.DEFAULT_MODEL_FOR[pipe])
        sc = Scenario(spec.hardware_preset("h200", 1), model, spec.pipeline_preset(pipe),
                      Strategy(StrategyKind.IDEAL), host_thread=False)
        judge = SimJudge(sc, AnalyticCostModel())
        t0 = time.perf_counter()
        exact = solve(judge)
        t_milp = time.perf_counter() - t0
        fixed = LocalSearch(tune_launch=False, remap=False, tune_priority=False,
                            tune_ahead=False).propose(judge, args.time_limit)
        tuned = LocalSearch().propose(judge, args.time_limit)
        m = exact.judged.throughput_samples_per_s
        rows.append({"pipeline": pipe, "milp_s": t_milp, "milp_status": exact.status,
                     "milp_kernels": [k.stage for k in exact.judged.plan.kernels],
                     "search_milp_decisions_vs_milp": fixed.throughput_samples_per_s / m - 1,
                     "search_vs_milp": tuned.throughput_samples_per_s / m - 1})
        r = rows[-1]
        print(f"{pipe:<9} MILP {t_milp:5.2f} s  search(MILP's decisions) vs MILP "
              f"{100 * r['search_milp_decisions_vs_milp']:+.2f}%  search vs MILP "
              f"{100 * r['search_vs_milp']:+.2f}%", flush=True)
    write_atomic(args.output, json.dumps(
        {"command": "python bench/milp_gap.py " + " ".join(argv or sys.argv[1:]),
         "commit": git_commit(),
         "cost_model": "analytic", "results": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
