#!/usr/bin/env bash
# The executor's host path before and after a change, in alternating rounds on one H200:
# bench/execute_gpu.py from old_tree/ (an earlier commit's code, prepared locally with
#   mkdir old_tree && git archive OLD backend bench/plans reports spec sim costmodel \
#     planner corun $(git ls-files 'bench/*.py') | tar -x -C old_tree
# and trimmed of data the run does not read) and from the working tree, ROUNDS times
# each, kaggle and terabyte at batch 4096 (host-paced: the host path is the iteration).
# Then the GPU tests of the executor's CUDA path. Run from the repository root with
# $OUT, OLD_COMMIT and NEW_COMMIT set.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
args=(--matrix plans --only kaggle,terabyte --batches 4096
      --strategies ideal,gpu-sequential,corun --iterations 300 --budget-s 100)
for r in $(seq 1 "${ROUNDS:-3}"); do
  (cd old_tree && CORUN_GIT_COMMIT=$OLD_COMMIT python bench/execute_gpu.py "${args[@]}" \
    --out "$OUT/old$r") 2>&1 | grep -v "iteration\|preparing\|earlier case\|compiling" | stamp
  CORUN_GIT_COMMIT=$NEW_COMMIT python bench/execute_gpu.py "${args[@]}" --out "$OUT/new$r" \
    2>&1 | grep -v "iteration\|preparing\|earlier case\|compiling" | stamp
done
NUMBA_ENABLE_CUDASIM=0 python -m pytest -q -p no:cacheprovider tests/test_batch_graphs.py \
  tests/test_graphed.py tests/test_executor.py tests/test_device_assembly.py 2>&1 | tail -3
