"""Planner speed and quality in simulation, on this machine.

Run: python bench/plan_speed.py -o plan_speed.json
By default the analytic cost model and the GPU side alone (what the committed results
used, the planner-quality targets of issue 6 being about the GPU schedule); --learned
takes the committed H200 model, --host-thread adds the host thread (costmodel/host.py),
under which every kaggle/terabyte strategy at these batches is capped by the host.
For each case: wall time of RAP's heuristic and of corun's search (until it converges or
hits --time-limit), plans simulated, and each plan's predicted throughput as a share of
`ideal` next to gpu-sequential's, all from the same simulator.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dataclasses import replace

from corun.costmodel import AnalyticCostModel
from corun.costmodel.learned import cost_model_for
from corun.planner import LocalSearch, RapProposer, SimJudge
from corun.sim import Scenario, Strategy, StrategyKind, simulate, simulate_steady
from corun.spec.provenance import git_commit
from corun.spec.serde import write_atomic

from corun import spec

CASES = [("kaggle", 1), ("terabyte", 1), ("kaggle", 8), ("terabyte", 8), ("wide-2x", 1),
         ("wide-4x", 1), ("wide-4x", 8), ("multihot", 1), ("heavy", 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("-o", "--output", required=True, help="the JSON to write")
    ap.add_argument("--learned", action="store_true", help="the committed learned model")
    ap.add_argument("--host-thread", action="store_true", help="model the host thread")
    args = ap.parse_args(argv)
    rows = []
    for pipe, gpus in CASES:
        hw = spec.hardware_preset("h200", gpus)
        model = spec.model_preset(spec.DEFAULT_MODEL_FOR[pipe])
        sc = Scenario(hw, model, spec.pipeline_preset(pipe), Strategy(StrategyKind.IDEAL),
                      host_thread=args.host_thread)
        cm = cost_model_for(hw) if args.learned else AnalyticCostModel()
        ideal = simulate(sc, cm, commit="bench").prediction.throughput_samples_per_s
        seq = simulate(replace(sc, strategy=Strategy(StrategyKind.GPU_SEQUENTIAL)), cm,
                       commit="bench").prediction.throughput_samples_per_s
        judge = SimJudge(sc, cm)
        t0 = time.perf_counter()
        rap = RapProposer().propose(judge, args.time_limit)
        t_rap = time.perf_counter() - t0
        t0 = time.perf_counter()
        search = LocalSearch()
        ours = search.propose(judge, args.time_limit)
        t_ours = time.perf_counter() - t0
        # re-judge both with the full-length simulation used for reports
        full = {}
        for name, j in (("rap", rap), ("corun", ours)):
            s = replace(sc, strategy=Strategy(StrategyKind.PLAN, plan=j.plan, name=name))
            full[name] = simulate_steady(s, cm,
                                         commit="bench").prediction.throughput_samples_per_s
        rows.append({"pipeline": pipe, "gpus": gpus, "rap_s": t_rap, "corun_s": t_ours,
                     "plans_simulated": judge.evaluations, "converged": search.converged,
                     "corun_kernels": len(ours.plan.kernels),
                     "corun_plan": {"kernels": [{"stage": k.stage, "blocks": k.blocks,
                                                 "nodes": len(k.nodes)}
                                                for k in ours.plan.kernels],
                                    "training_priority_high": ours.plan.training_priority_high,
                                    "cpu_nodes": len(ours.plan.cpu_nodes)},
                     "rap_kernels": len(rap.plan.kernels),
                     "gpu_sequential_of_ideal": seq / ideal, "rap_of_ideal": full["rap"] / ideal,
                     "corun_of_ideal": full["corun"] / ideal})
        r = rows[-1]
        print(f"{pipe:<9} {gpus} GPU  corun {t_ours:6.2f} s ({r['plans_simulated']} plans"
              f"{'' if search.converged else ', stopped at the time limit'})  "
              f"seq {r['gpu_sequential_of_ideal']:.3f}  rap {r['rap_of_ideal']:.3f}  "
              f"corun {r['corun_of_ideal']:.3f} of ideal", flush=True)
    doc = {"command": " ".join(["python bench/plan_speed.py", *(argv or sys.argv[1:])]),
           "commit": git_commit(),
           "machine": f"{platform.machine()}, {platform.python_version()}",
           "cost_model": cm.name, "host_thread": args.host_thread,
           "time_limit_s": args.time_limit, "results": rows}
    write_atomic(args.output, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
