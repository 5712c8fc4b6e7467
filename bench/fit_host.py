"""Fit the host-thread constants of costmodel/host.py from `corun execute` runs on the GPU
(the fits: costmodel/host_fit.py).

    python bench/fit_host.py bench/results/raw/execute_plans_run7.json [...] \
        [-o bench/results/host_fit.json]
    python bench/fit_host.py --shares-by-model RAW.json [...] [-o OUT.json]
    python bench/fit_host.py --workers RAW.json [...] [-o OUT.json]
    python bench/fit_host.py --owner RAW.json [...] [-o OUT.json]
    python bench/fit_host.py --step-scales RAW.json [...] [-o OUT.json]

--shares-by-model fits only each model's share of the step's launches by stage
(costmodel.host.MODEL_LAUNCH_SHARE), leaving the constants to the runs they came from;
--workers only what host workers cost the launching thread, on one GPU and on several
(costmodel.host.WORKERS_MS, DISTRIBUTED_WORKERS_MS), with the committed batch costs;
--owner only what owner-mapped tables save the distributed step's input all-to-all and
what their lane adds to the batch (DISTRIBUTED_OWNER_A2A_MS, DISTRIBUTED_OWNER_LANE_MS);
--step-scales only each model's eager host step over criteo-kaggle's, from the host-steps
matrix's ideal runs (measured; the model keeps one step, costmodel/host.py says why).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_execute import require_raw  # noqa: E402
from costmodel.host import H200_HOST  # noqa: E402
from costmodel.host_fit import (  # noqa: E402
    fit,
    launch_shares_by_model,
    owner_ms,
    runs,
    step_scales,
    workers_ms,
)
from spec import SpecError  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("-o", "--out", type=Path)
    ap.add_argument("--shares-by-model", action="store_true",
                    help="fit each model's launch shares by stage only")
    ap.add_argument("--workers", action="store_true",
                    help="fit only what host workers cost the launching thread (one GPU "
                         "and several)")
    ap.add_argument("--owner", action="store_true",
                    help="fit only what owner-mapped tables save and cost the host (several "
                         "GPUs)")
    ap.add_argument("--step-scales", action="store_true",
                    help="fit only each model's eager host step over criteo-kaggle's")
    args = ap.parse_args(argv)
    require_raw(ap, args.raw)
    rows = runs(args.raw)
    try:
        if args.workers:  # each GPU count the runs have, with its committed batch cost
            fitted = {}
            for several, fixed in ((False, H200_HOST.batch_fixed_ms),
                                   (True, H200_HOST.distributed_batch_fixed_ms)):
                if any((r.get("gpus", 1) > 1) == several for r in rows):
                    fitted["several" if several else "one"] = workers_ms(rows, fixed, several)
        elif args.owner:
            fitted = owner_ms(rows)
        elif args.step_scales:
            fitted = step_scales(rows)
        elif args.shares_by_model:
            fitted = launch_shares_by_model(rows)
            if not fitted:
                raise SpecError("raw", [p.name for p in args.raw], "runs with an ideal "
                                "step on one GPU that did not block for the GPU")
        else:
            fitted = fit(rows)
    except SpecError as e:
        ap.error(str(e))
    result = {"command": " ".join(["python", "bench/fit_host.py", *sys.argv[1:]]),
              "fit": fitted, "runs": rows}
    print(json.dumps(result["fit"], indent=1))
    if args.out:
        write_atomic(args.out, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
