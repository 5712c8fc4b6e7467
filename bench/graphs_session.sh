#!/usr/bin/env bash
# The CUDA-graph trainer on the H200, run 4: the GPU tests, the matrix again (as
# run 3, with corun's plan two batches ahead beside it), and 16 host workers against
# the graphed step at batch 4096. Run from the repository root with $OUT set.
set -uo pipefail
python -m pytest -q -p no:cacheprovider tests/test_graphed.py 2>&1 | tail -3
python bench/execute_gpu.py --matrix graphs --strategies ideal,gpu-sequential,rap,corun,corun+ahead2 \
  --budget-s 300 --out "$OUT"
python bench/execute_gpu.py --matrix graphs-cpu --only kaggle --budget-s 200 --out "$OUT"
