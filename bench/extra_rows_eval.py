"""Would extra co-running rows help the learned model? Two checks, no GPU:
  1. the base profile's held-out split (seeds 0-2) scored by a model fitted on its
     training rows alone and by one fitted on them plus every extra row;
  2. the extra rows of each pipeline held out whole, scored by a model fitted on the
     base rows alone and by one fitted on the base rows plus the other pipelines' extras.

    python bench/extra_rows_eval.py costmodel/data/h200 costmodel/data/h200/rap \
        [-o bench/results/rap_rows_eval.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.learned import CoRunModel, measured, score, split  # noqa: E402
from costmodel.profile_data import read_profile  # noqa: E402
from spec.serde import write_atomic  # noqa: E402

TARGETS = ("kernel_alone", "kernel_corun", "stage_slowdown")


def mape(model: CoRunModel, rows: list[dict]) -> dict[str, float]:
    pred, true = model.predict(rows), measured(rows)
    return {t: round(score(pred[t], true[t]).mape_pct, 1) for t in TARGETS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path)
    ap.add_argument("extra", type=Path)
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    for name in ("base", "extra"):
        if not getattr(args, name).exists():
            ap.error(f"{name} = {str(getattr(args, name))!r}: a profile CSV or a directory "
                     "of them (corun profile --out)")
    base, extra = read_profile(args.base), read_profile(args.extra)
    out: dict = {"command": " ".join(["python", "bench/extra_rows_eval.py", *sys.argv[1:]]),
                 "base_rows": len(base), "extra_rows": len(extra), "base_split": [],
                 "extra_by_pipeline": []}
    for seed in (0, 1, 2):
        train, test = split(base, 0.25, seed)
        out["base_split"].append({
            "seed": seed, "held_out": len(test),
            "base_only": mape(CoRunModel(seed).fit(train), test),
            "with_extra": mape(CoRunModel(seed).fit(train + extra), test)})
    alone = CoRunModel(0).fit(base)
    for pipe in sorted({r["pipeline"] for r in extra}):
        test = [r for r in extra if r["pipeline"] == pipe]
        others = [r for r in extra if r["pipeline"] != pipe]
        out["extra_by_pipeline"].append({
            "pipeline": pipe, "held_out": len(test), "base_only": mape(alone, test),
            "with_other_extra": mape(CoRunModel(0).fit(base + others), test)})
    print(json.dumps(out, indent=1))
    if args.out:
        write_atomic(args.out, json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
