#!/usr/bin/env bash
# The one-GPU eager plan folders outside the matrix that session 38 planned again
# at HEAD (GPUS=1 bash bench/plans/make.sh) and never measured: corun's plan beside the
# baselines, 2 rounds each. Run from the repository root with $OUT set; render with
# python bench/render_repeats.py RAW ... -o OUT.md.
set -uo pipefail
python bench/execute_gpu.py --matrix plans --only kaggle,terabyte --batches 16384 \
  --strategies ideal,gpu-sequential,rap,corun --repeats 2 --budget-s 150 --out "$OUT/criteo"
python bench/execute_gpu.py --matrix plans --only heavy --batches 4096 \
  --strategies ideal,gpu-sequential,rap,corun --repeats 2 --budget-s 100 --out "$OUT/heavy"
python bench/execute_gpu.py --matrix heavy --batches 32768 \
  --strategies ideal,gpu-sequential,rap,corun --repeats 2 --budget-s 150 --out "$OUT/fused"
python bench/execute_gpu.py --matrix heavy-lean --batches 16384 \
  --strategies ideal,gpu-sequential,corun --repeats 2 --budget-s 100 --out "$OUT/lean"
