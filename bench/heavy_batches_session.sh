#!/usr/bin/env bash
# Graphed heavy-lean at the smaller batches, where the same preprocessing is a larger
# share of a step: at b8192 and b12288, ideal, gpu-sequential, the plan folder's choice
# and runners-up and the choice's kernel at other launch shapes and stages; the same at
# b16384, for the same machine's reference; in rounds (timed batches uncompared). Run from
# the repository root on the H200 with $OUT set.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 8192,12288,16384 --repeats 3 \
  --strategies ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5,at:emb_bwd+b528+ahead2,at:emb_bwd+b264+ahead2,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b396+ahead2 \
  --budget-s 480 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
