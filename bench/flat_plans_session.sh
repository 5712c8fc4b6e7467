#!/usr/bin/env bash
# The plans re-made for the trainer's flat interaction (bench/plans/make.sh after the
# refit of 2026-12-01), measured on one H200 in rounds: the plans matrix's GPU-paced
# workloads (2 rounds), kaggle and terabyte at batch 4096 (4 rounds), and the heavy case at
# batch 16384 (2 rounds). PART=graphs runs the graphed matrix instead (2 rounds). Run
# from the repository root with $OUT set; each part writes its own folder under $OUT.
set -uo pipefail
if [ "${PART:-plans}" = graphs ]; then
  python bench/execute_gpu.py --matrix graphs --strategies ideal,gpu-sequential,rap,corun \
    --repeats 2 --budget-s 480 --out "$OUT/graphs"
  exit
fi
python bench/execute_gpu.py --matrix plans --only kaggle,terabyte,wide-2x,wide-4x --repeats 2 \
  --budget-s 270 --out "$OUT/rounds"
python bench/execute_gpu.py --matrix plans --only kaggle,terabyte --batches 4096 --repeats 4 \
  --budget-s 80 --out "$OUT/b4096"
python bench/execute_gpu.py --matrix heavy --batches 16384 \
  --strategies ideal,gpu-sequential,gpu-overlap,corun --repeats 2 --budget-s 120 --out "$OUT/heavy"
