#!/usr/bin/env bash
# The feed thread (backend/feed_thread.py, RunSettings.feed_thread, "+feed") against the
# batch work done inline on the launching thread (the default), on one lent H200, each in
# rounds beside ideal in the same command. Run 1 (commit 65568f2, raw
# bench/results/raw/execute_feed_thread_*.json.gz) ran when the feed thread was the
# default: its plain labels are the thread, "+inline" the launching thread. With OUT set
# by the device tool:
#   PART=measure bash bench/feed_thread_session.sh   the executor's tests on the GPU,
#       kaggle and terabyte b4096 (host-paced: 4 rounds), b8192 (GPU-paced: 2 rounds),
#       then graphed heavy-lean b16384 (issue 6's heavy case, 2 rounds)
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
flat=ideal,gpu-sequential,gpu-sequential+feed,rap,corun,corun+feed
case "${PART:-measure}" in
measure)
  NUMBA_ENABLE_CUDASIM=0 python -m pytest -q -p no:cacheprovider tests/test_executor.py \
    -k "feed or mixed or ahead or wrong_output" 2>&1 | tail -3
  python bench/execute_gpu.py --matrix plans --only kaggle,terabyte --batches 4096 \
    --strategies "$flat" --repeats 4 --budget-s 170 --out "$OUT/b4096" 2>&1 \
    | grep -v "iteration" | stamp
  python bench/execute_gpu.py --matrix plans --only kaggle,terabyte --batches 8192 \
    --strategies "$flat" --repeats 2 --budget-s 110 --out "$OUT/b8192" 2>&1 \
    | grep -v "iteration" | stamp
  python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 \
    --strategies ideal,gpu-sequential,corun,corun+feed --repeats 2 --budget-s 110 \
    --out "$OUT/heavy" 2>&1 | grep -v "iteration" | stamp
  ;;
*)
  echo "PART must be measure" >&2
  exit 2
  ;;
esac
