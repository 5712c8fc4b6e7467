#!/usr/bin/env bash
# One device command, two parts, each its own folder under $OUT (run from the repository
# root on the H200):
#   breakdown: where the launching thread's time goes, call by call, at kaggle b4096 (the
#              eager step the host paces): ideal, gpu-sequential and corun's plan
#              (bench/host_breakdown.py; the wrappers' own cost is in every number);
#   remade:    the plans bench/plans/make.sh re-made with the assembly hold (commit
#              1376712) that no run had measured: wide-2x b4096, heavy-fused b16384 and
#              eager heavy-lean b16384 with their runners-up, 2 rounds each.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
if [ "${PART:-all}" != remade ]; then
  python bench/host_breakdown.py --out "$OUT/breakdown" -- --matrix plans --only kaggle \
    --batches 4096 --strategies ideal,gpu-sequential,corun --iterations 200 --budget-s 90 \
    2>&1 | grep -v "iteration" | stamp
fi
if [ "${PART:-all}" != breakdown ]; then
  python bench/execute_gpu.py --matrix plans --only wide-2x --batches 4096 \
    --strategies ideal,gpu-sequential,rap,corun --repeats 2 --budget-s 70 \
    --out "$OUT/wide2x" 2>&1 | grep -v "iteration" | stamp
  python bench/execute_gpu.py --matrix heavy --batches 16384 \
    --strategies ideal,gpu-sequential,corun,corun-2,corun-3 --repeats 2 --budget-s 120 \
    --out "$OUT/heavy_fused" 2>&1 | grep -v "iteration" | stamp
  python bench/execute_gpu.py --matrix heavy-lean --batches 16384 \
    --strategies ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5 --repeats 2 \
    --budget-s 150 --out "$OUT/heavy_lean" 2>&1 | grep -v "iteration" | stamp
fi
