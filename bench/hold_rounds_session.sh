#!/usr/bin/env bash
# The planner's heavy-lean b16384 plans that release a kernel early in the forward, at
# their own block count and at more blocks ("+b<N>"), beside ideal and gpu-sequential in
# rounds without the profiler (bench/results/kernel_timeline_h200.md, block counts).
# With OUT set by the device tool:
#   bash bench/hold_rounds_session.sh
# Returns $OUT/hold_eager.tar and $OUT/hold_graphed.tar (bench/heavy_rounds.sh).
set -u
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
bash bench/heavy_rounds.sh hold_eager hold_eager heavy-lean "${ROUNDS:-3}" \
  ideal,gpu-sequential,corun,corun+b198,corun+b264,corun+b396 16384:200
bash bench/heavy_rounds.sh hold_graphed hold_graphed heavy-lean-graphs "${ROUNDS:-3}" \
  ideal,gpu-sequential,corun,corun-3,corun-3+b198,corun-3+b264,corun-3+b396 16384:230
