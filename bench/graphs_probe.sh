#!/usr/bin/env bash
# CUDA-graph trainer on the H200, first look (run 1): the GPU tests, then the eager and
# graphed `ideal` and gpu-sequential at b4096 (host-paced eagerly) in one command.
# Run from the repository root with $OUT set.
set -uo pipefail
python -m pytest -q -p no:cacheprovider tests/test_graphed.py 2>&1 | tail -15
python bench/execute_gpu.py --matrix graphs --batches 4096 --only kaggle,terabyte,wide-4x \
  --strategies ideal+eager,ideal,gpu-sequential --budget-s 400 --out "$OUT"
