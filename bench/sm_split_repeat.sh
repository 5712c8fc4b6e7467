#!/usr/bin/env bash
# Whether the SM split's effect on the heavy case outlasts run-to-run noise: rounds of
# ideal, gpu-sequential, gpu-overlap and gpu-overlap with the preprocessing stream on 24
# and 32 SMs of its own at batch 8192, and of ideal, gpu-overlap and +sm16 at 16384, one
# process a round, alternating. Usage, with OUT set by the device tool:
#   bash bench/sm_split_repeat.sh
set -u
for r in ${ROUNDS:-1 2 3}; do
  python bench/execute_gpu.py --matrix heavy --batches 8192 --iterations 100 --warmup 10 \
    --strategies ideal,gpu-sequential,gpu-overlap,gpu-overlap+sm24,gpu-overlap+sm32 \
    --out "$OUT/b8192_round$r" 2>&1 | grep -E "Error|error"
done
for r in ${ROUNDS16:-1 2}; do
  python bench/execute_gpu.py --matrix heavy --batches 16384 --iterations 100 --warmup 10 \
    --strategies ideal,gpu-overlap,gpu-overlap+sm16 \
    --out "$OUT/b16384_round$r" 2>&1 | grep -E "Error|error"
done
python bench/render_heavy_probe.py "$OUT"/b*_round*/execute_heavy.json
