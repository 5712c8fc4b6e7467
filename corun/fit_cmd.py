"""`corun fit`: fit the learned co-running model on a profile CSV and report held-out
error against the analytic and RAP-style baselines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from corun.out_folder import out_file
from corun.spec import SpecError
from corun.workload import seed


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="a profile CSV from corun profile, or its --out "
                   "directory (every profile*.csv in it, the shards of one profile, and "
                   "every resident*.csv)")
    p.add_argument("-o", "--output", type=out_file, required=True,
                   help="the fitted model (a gzipped pickle; a .json report and a held-out "
                   "figure are written beside it)")
    p.add_argument("--holdout", type=float, default=0.25,
                   help="share of model/batch combinations and of kernel feature sets "
                   "held out")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the held-out split and of the fitted trees")


def run(args: argparse.Namespace) -> int:
    from corun.costmodel.evaluation import evaluate, measured
    from corun.costmodel.features import TARGETS
    from corun.costmodel.learned import CoRunModel
    from corun.costmodel.model_file import library_versions, save_model
    from corun.costmodel.profile_data import data_hash, fit_rows, graphed_rows, lookup_rows
    from corun.format import table
    from corun.reports.figures import heldout_scatter, save

    if not 0 < args.holdout < 1:
        raise SpecError("--holdout", args.holdout, "a fraction in (0, 1)")
    if not Path(args.data).exists():
        raise SpecError("data", args.data, "an existing profile CSV or directory")
    rows = fit_rows(args.data)
    if not rows:
        raise SpecError("data", args.data, "profile CSVs with at least one measured row")
    _, scores, test, pred = evaluate(rows, args.holdout, args.seed)
    lookup = lookup_rows(args.data)
    # the saved model sees every row, and the graphed profiles' kernel times alone
    final = CoRunModel(args.seed).fit(rows, lookup=lookup, alone=graphed_rows(args.data))
    out = Path(args.output)
    meta = {"data": str(args.data), "data_sha256": data_hash(args.data), "rows": len(rows),
            "lookup_rows": len(lookup), "heldout_rows": len(test), "holdout": args.holdout,
            "seed": args.seed,
            "gpus": sorted({r["gpu"] for r in rows}), "versions": library_versions(),
            "heldout": {m: {t: vars(s) for t, s in by.items()} for m, by in scores.items()}}
    save_model(final, out, meta)
    save(heldout_scatter(pred, measured(test)), out.parent, out.stem + "-heldout")
    print(f"{len(rows)} rows, {len(test)} held out (whole model/batch combinations and "
          f"kernel feature sets); {len(lookup)} more looked up, not fitted")
    print(table(["target", "model", "held-out MAPE", "within ±10%"],
                [[t, m, f"{scores[m][t].mape_pct:.1f}%", f"{100 * scores[m][t].within_10pct:.0f}%"]
                 for t in TARGETS for m in scores if t in scores[m]]))
    print(f"wrote {out}, {out.with_suffix('.json')}, {out.parent / (out.stem + '-heldout.png')}",
          file=sys.stderr)
    return 0
