#!/usr/bin/env bash
# Room for the heavy kernel in a latency-bound dense part (issue 6's heavy case): the
# heavy-short pipeline beside heavy-hot with a deep, narrow top MLP (spec.model
# heavy-deep-<layers>: 12 or 24 layers of 64), graphed b16384, 2 rounds. What it
# measures: the gap gpu-sequential opens and how much of it the one kernel released at
# the top MLP's forward or backward (thin launches, two batches ahead) recovers; the
# tower's GEMMs fill few SMs, so a kernel beside them should run near its own pace.
# Run from the repository root with $OUT set, at commit f30b1c30 (the presets were
# removed after run 1). Run 1 (session 40): no room, bench/results/deep_tower_h200.md.
set -uo pipefail
S="ideal,gpu-sequential,at:top_mlp_fwd+b132+ahead2,at:top_mlp_fwd+b198+ahead2,at:top_mlp_fwd+b264+ahead2,at:top_mlp_bwd+b198+ahead2,at:emb_bwd+b264+ahead2"
for layers in ${LAYERS:-12 24}; do
  python bench/execute_gpu.py --matrix heavy-short-graphs --model "heavy-deep-$layers" \
    --only heavy-short --batches 16384 --repeats 2 --strategies "$S" \
    --budget-s "${BUDGET_S:-200}" --out "$OUT/deep$layers" 2>&1 | grep -v "iteration [0-9]"
done
