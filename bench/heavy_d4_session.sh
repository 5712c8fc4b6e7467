#!/usr/bin/env bash
# heavy-d4 beside heavy-4gram, the step graphed (a candidate heavy case: the same
# preprocessing as heavy-lean's from 44% fewer raw bytes, beside half its embedding
# work): ideal, gpu-sequential, the plan folder's choice and the one kernel at the stages
# and launch shapes that hid heavy-lean's preprocessing best, in 3 rounds at b16384 and
# b8192 (timed batches uncompared). Run from the repository root on the H200 with $OUT set.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
python bench/execute_gpu.py --matrix heavy-d4-graphs --batches 8192,16384 --repeats 3 \
  --strategies ideal,gpu-sequential,corun,corun-4,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b264+ahead2,at:emb_bwd+b264+ahead2,at:emb_bwd+b1056+ahead2,at:bottom_mlp_bwd+b264+ahead2,at:top_mlp_bwd+b132+ahead2 \
  --budget-s 420 --out "$OUT" 2>&1 | grep -v "iteration [0-9]" | stamp
