#!/usr/bin/env bash
# The report of the step replayed as CUDA graphs (run 7 of `python bench/execute_gpu.py
# --matrix graphs --strategies ideal,gpu-sequential,rap,corun`), from committed files only (no GPU needed):
# each measured case into its own Measurement file, then corun report against the
# predictions its plans were chosen on (bench/plans/graphs/, bash bench/plans/make.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=reports/h200-graphs
rm -rf "$out/measurements" "$out"/*.png "$out"/*.svg "$out/summary.md"
python3 - <<'PY'
import json
from pathlib import Path

from spec.serde import read_stored_text, write_atomic

out = Path("reports/h200-graphs/measurements")
for case in json.loads(read_stored_text("bench/results/raw/execute_graphs_run7.json")):
    m = case.get("measurement")
    if m and "+" not in case["strategy"]:  # the matrix's strategies, not their variants
        write_atomic(out / f"{case['pipeline']}-b{case['batch']}-{case['strategy']}.json",
                     json.dumps(m, indent=1))
PY
preds=()
for d in kaggle-b4096 kaggle-b8192 terabyte-b4096 terabyte-b8192 wide-2x-b4096 wide-2x-b8192 \
         wide-4x-b4096 wide-4x-b8192; do
  for s in ideal gpu-sequential rap corun; do preds+=("bench/plans/graphs/$d/prediction-$s.json"); done
done
corun report "${preds[@]}" "$out"/measurements/*.json -o "$out"
