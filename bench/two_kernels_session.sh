#!/usr/bin/env bash
# The heavy pipelines in two kernels ("two:<stage A>/<blocks A>/<k>/<stage B>/<blocks B>",
# bench/execute_gpu.py two_kernel_plan): the dense and the first k sparse features in a
# kernel released at the graphed embedding forward, which a kernel beside it does not
# slow, the rest at the stage where the one kernel hid best. Graphed heavy-short b16384
# (gpu-sequential 26.5-27.4% below ideal; the one kernel at emb_bwd recovered 41-56%),
# then heavy-lean b16384, 2 rounds each. Run from the repository root with $OUT set.
# Run 1 (session 39): no split beat the one kernel; bench/results/two_kernels_h200.md.
set -uo pipefail
python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384 --repeats 2 \
  --strategies "ideal,gpu-sequential,corun,two:emb_fwd/1056/4/emb_bwd/528+ahead2,two:emb_fwd/1056/8/emb_bwd/528+ahead2,two:emb_fwd/1056/12/emb_bwd/528+ahead2,two:emb_fwd/264/6/emb_bwd/528+ahead2,two:emb_fwd/1056/8/interaction_bwd/198+ahead2" \
  --budget-s "${BUDGET_S:-240}" --out "$OUT/short" 2>&1 | grep -v "iteration [0-9]"
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
  --strategies "ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,two:emb_fwd/1056/4/interaction_bwd/198+ahead2,two:emb_fwd/1056/8/interaction_bwd/198+ahead2,two:emb_fwd/1056/8/interaction_bwd/132+ahead2" \
  --budget-s "${BUDGET_S:-240}" --out "$OUT/lean" 2>&1 | grep -v "iteration [0-9]"
