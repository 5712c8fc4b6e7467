"""How well the learned stage-time model carries to a model it never saw: each profiled
model left out in turn, the stage estimator fitted on the others' stage rows and scored
on the left-out model's (MAPE over its stages at every profiled batch). `corun fit`'s
held-out split leaves out model/batch combinations, so every model it scores was seen at
another batch; this is the harder question.

    python bench/stage_leave_model_out.py [DATA_DIR] -> bench/results/stage_leave_model_out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel.learned import _stage_regressor, stage_only  # noqa: E402
from costmodel.profile_data import read_profile  # noqa: E402
from spec.serde import write_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?", default=str(ROOT / "costmodel/data/h200"))
    ap.add_argument("-o", "--out", default=str(ROOT / "bench/results/stage_leave_model_out.json"))
    args = ap.parse_args(argv)
    if not Path(args.data).exists():
        ap.error(f"data = {args.data!r}: an existing profile CSV or a directory of them")
    keys: dict[tuple, dict] = {}  # one row per (gpu, model, batch, stage)
    for r in read_profile(args.data):
        keys.setdefault((r["gpu"], r["model"], r["batch"], r["stage"]), r)
    rows = list(keys.values())
    x = stage_only(rows)
    y = np.array([float(r["stage_alone_ms"]) for r in rows])
    result = {}
    for model in sorted({r["model"] for r in rows}):
        out = np.array([r["model"] == model for r in rows])
        est = _stage_regressor().fit(x[~out], np.maximum(y[~out], 1e-4))
        pred = est.predict(x[out])
        result[model] = float(100 * np.mean(np.abs(pred - y[out]) / y[out]))
        print(f"{model:16s} stage-alone MAPE {result[model]:6.1f}% ({out.sum()} stages)")
    data = Path(args.data).resolve()
    write_atomic(args.out, json.dumps({
        "command": "python bench/stage_leave_model_out.py",
        "data": str(data.relative_to(ROOT) if data.is_relative_to(ROOT) else data),
        "stage_alone_mape_pct": result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
