#!/usr/bin/env bash
# What comparing every batch with the reference costs the graphed heavy-lean b16384 plans
# (the assembly kernel reads the reference too: 785 MB a batch against 523 without), and
# whether a finer assembly grid shortens the optimizer's wait behind it: ideal,
# gpu-sequential, the planner's choice (396 blocks at interaction_bwd) and its runners-up
# of 198 and 264 blocks there two batches ahead, each with and without the check
# ("+nocheck"), and the 198-block plan with about 5 ids a thread in the assembly
# ("+ipt5"), 3 rounds in a turned order. Run from the repository root on the H200 with
# $OUT set; bench/results/check_cost_h200.md renders it.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 3 \
  --strategies ideal,gpu-sequential,corun,corun-3+ahead2,corun-5+ahead2,gpu-sequential+nocheck,corun+nocheck,corun-3+ahead2+nocheck,corun-5+ahead2+nocheck,corun-3+ahead2+ipt5 \
  --budget-s 480 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
