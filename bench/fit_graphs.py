"""The graphed step's stage times into the cost model, and the held-out error of the
saving it applies where none was measured (costmodel/graphs.py).

    python bench/fit_graphs.py bench/results/raw/execute_graphs_stages_run2.json \
        -o costmodel/data/h200/graphed-stages.csv --report bench/results/graphs_fit.json

Takes every `ideal` case of the given `bench/execute_gpu.py --matrix graphs...` files (a
later file's case replaces an earlier one's) and writes one CSV row per stage. The report
holds each model out in turn: the savings fitted on the other models' stages, applied to
its eager times, against its measured graphed times. `--dry-run` writes nowhere.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.graphs import COLUMNS, GraphedStages  # noqa: E402
from costmodel.learned import (  # noqa: E402
    STAGES,
    cost_model_for,
    graph_key,
    graphed_stages,
    preset_stages,
    stage_key,
)
from spec import hardware_preset  # noqa: E402
from spec.serde import read_stored_text, write_atomic  # noqa: E402


def graphed_rows(files: list[str]) -> list[dict]:
    rows: dict[tuple, dict] = {}
    for f in files:
        for case in json.loads(read_stored_text(f)):
            m = case.get("measurement")
            if not m or m["strategy"] != "ideal":
                continue
            for stage in STAGES:
                rows[(m["model"], m["batch_per_gpu"], stage)] = {
                    "gpu": m["hardware"], "model": m["model"], "batch": m["batch_per_gpu"],
                    "stage": stage, "graphed_ms": round(m["stages"][stage]["median_ms"], 5),
                    "source": Path(f).name}
    return list(rows.values())


def held_out(rows: list[dict]) -> dict:
    """Each model held out: its stages predicted from the others' savings, by model-batch
    (the step's sum) and by stage."""
    hw = hardware_preset("h200", 1)
    learned = cost_model_for(hw)
    models = sorted({r["model"] for r in rows})
    cases, stage_errors = [], []
    for held in models:
        fit = graphed_stages(learned.model, [r for r in rows if r["model"] != held])
        blind = GraphedStages({}, fit.saving_ms)
        for b in sorted({r["batch"] for r in rows if r["model"] == held}):
            works = preset_stages(held, b)
            measured = {r["stage"]: r["graphed_ms"] for r in rows
                        if r["model"] == held and r["batch"] == b}
            pred = {s: blind.stage_ms(s, graph_key(hw.gpu.name, w),
                                      learned.stage_ms(replace(w, graphed=False), hw))
                    for s, w in works.items()}
            profiled = all(stage_key(hw.gpu.name, w) in learned.model.stage_measured
                           for w in works.values())
            for s in measured:
                stage_errors.append(abs(pred[s] / measured[s] - 1) * 100)
            step_pred, step_meas = sum(pred.values()), sum(measured.values())
            cases.append({"model": held, "batch": b, "eager_profiled": profiled,
                          "predicted_ms": round(step_pred, 4), "measured_ms": round(step_meas, 4),
                          "error_pct": round((step_pred / step_meas - 1) * 100, 2)})
    prof = [abs(c["error_pct"]) for c in cases if c["eager_profiled"]]
    return {"cases": cases,
            "step_mape_pct_profiled_batches": round(statistics.mean(prof), 2) if prof else None,
            "step_mape_pct_all": round(statistics.mean(abs(c["error_pct"]) for c in cases), 2),
            "stage_mape_pct_all": round(statistics.mean(stage_errors), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("files", nargs="+")
    ap.add_argument("-o", "--output", default="costmodel/data/h200/graphed-stages.csv")
    ap.add_argument("--report", default="bench/results/graphs_fit.json")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    rows = graphed_rows(args.files)
    learned = cost_model_for(hardware_preset("h200", 1))
    savings = graphed_stages(learned.model, rows).saving_ms
    report = {"command": "python bench/fit_graphs.py " + " ".join(sys.argv[1:]),
              "rows": len(rows), "saving_ms": {s: round(v, 5) for s, v in savings.items()},
              "held_out_by_model": held_out(rows)}
    print(json.dumps(report, indent=1))
    if not args.dry_run:
        buf = io.StringIO()
        w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        write_atomic(Path(args.output), buf.getvalue())
        write_atomic(Path(args.report), json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
