#!/usr/bin/env bash
# Regenerate the H200 report from committed files only (no GPU needed):
# the executor's raw runs -> per-run Measurement files, then corun report against the
# predictions the planner made for the same workloads (bench/plans/make.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 bench/render_execute.py
preds=()
for s in ideal gpu-sequential gpu-overlap rap corun; do preds+=("bench/plans/heavy-b4096/prediction-$s.json"); done
for d in kaggle-b4096 kaggle-b8192 kaggle-b16384 terabyte-b4096 terabyte-b8192 terabyte-b16384 \
         wide-2x-b4096 wide-2x-b8192 wide-4x-b4096 wide-4x-b8192; do
  for s in ideal gpu-sequential rap corun; do preds+=("bench/plans/$d/prediction-$s.json"); done
done
for s in ideal gpu-sequential gpu-overlap; do preds+=("bench/plans/multihot-b8192/prediction-$s.json"); done
for s in ideal cpu-16; do preds+=("bench/plans/multihot-b4096/prediction-$s.json"); done
rm -f reports/h200/*.png reports/h200/*.svg reports/h200/summary.md
corun report "${preds[@]}" reports/h200/measurements/*.json -o reports/h200
