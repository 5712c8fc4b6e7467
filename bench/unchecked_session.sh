#!/usr/bin/env bash
# The executor's GPU tests, then graphed heavy-lean b16384 in 3 rounds with the timed
# batches assembled without the reference comparison (the default since
# RunSettings.check_timed): ideal, gpu-sequential, the re-made plan folder's choice and
# runners-up, the 198-block kernel at interaction_bwd two ahead (the fastest of
# check_cost_session.sh), and gpu-sequential and the choice with the timed batches
# compared ("+checked"), in one command. Run from the repository root on the H200 with
# $OUT set.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
timeout 300 python -m pytest -q -p no:cacheprovider tests/test_batch_graphs.py \
  tests/test_graphed.py tests/test_executor.py 2>&1 | tail -5 | stamp
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 3 \
  --strategies ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5,at:interaction_bwd+b198+ahead2,gpu-sequential+checked,corun+checked \
  --budget-s 260 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
