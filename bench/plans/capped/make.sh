#!/usr/bin/env bash
# The eager heavy plans `corun plan` confines to 96 of the H200's SMs (planner/sm_cap.py:
# a kernel of an SM count of blocks that runs 1 ms or more alone beside the eager step),
# planned as their uncapped folders were (bench/plans/make.sh, bench/rehash_session.sh),
# for `corun tune` with the cap variants (bench/sm_cap_session.sh PART=tune).
set -euo pipefail
cd "$(dirname "$0")/../../.."
plan() {  # plan NAME PIPELINE MODEL BATCH RUNNERS_UP TIME_LIMIT
  corun plan --hardware h200 --gpus 1 --pipeline "$2" --model "$3" --batch "$4" \
    --runners-up "$5" --time-limit "$6" --no-traces --quiet --out "bench/plans/capped/$1" \
    > "bench/plans/capped/$1.txt"
}
plan heavy-small-b16384 heavy-small heavy-small 16384 2 10
plan heavy-lean-b32768 heavy-small heavy-lean 32768 4 10
plan rehash-heavy-lean-b16384 heavy-rehash heavy-lean 16384 4 30
plan rehash-heavy-lean-b32768 heavy-rehash heavy-lean 32768 4 30
