#!/usr/bin/env bash
# Graphed heavy-lean at b8192, where gpu-sequential measured 20.2% below ideal
# (heavy_batches_h200.md) and the 198-block kernel at interaction_bwd recovered 69%:
# whether a thinner kernel (66-198 blocks, two batches ahead) released at top_mlp_bwd,
# interaction_bwd or bottom_mlp_bwd hides more of the pipeline beside the plain update's
# serialized atomics. 3 rounds. Run from the repository root on the H200 with $OUT set.
set -uo pipefail
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 8192 --repeats 3 \
  --strategies ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b99+ahead2,at:interaction_bwd+b66+ahead2,at:top_mlp_bwd+b132+ahead2,at:top_mlp_bwd+b66+ahead2,at:bottom_mlp_bwd+b132+ahead2,at:bottom_mlp_bwd+b66+ahead2 \
  --budget-s "${BUDGET_S:-330}" --out "$OUT" 2>&1 | grep -v "iteration [0-9]"
