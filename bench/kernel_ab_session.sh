#!/usr/bin/env bash
# The fused kernels with slot constants hoisted and ngram's index in 32 bits (new)
# against the code before (old), on the H200, in one command:
#   mkdir -p .old/backend && git show aa3e82a:backend/codegen.py > .old/backend/codegen.py \
#     && git show aa3e82a:backend/scalar.py > .old/backend/scalar.py   # here, once
#   [PART=ops|ncu|caps] bash bench/kernel_ab_session.sh        # there, with .old carried
# PART=rounds (the default):
# 1. the heavy case in rounds with the new kernels (bench/heavy_rounds.sh);
# 2. bench/contention_probe.py with the new kernels, then with the old ones swapped in
#    (contention_new.json, contention_old.json: each kernel alone and beside each stage);
# 3. the kernel tests on the GPU (tests/test_kernels.py, simulator off).
# PART=ops: bench/ops_gpu.py's fused whole-pipeline kernels of every preset, alone,
# checked against the reference, new then old (ops_new.json, ops_old.json).
# PART=ncu: Nsight Compute's counters of the fused kernel, alu and stream at heavy b16384
# (bench/contention_probe.py --launch-once), new then old (ncu_new.csv, ncu_old.csv).
# PART=caps: every preset's fused kernel with and without a 32-register cap, alone, the
# capped one checked against the reference (ops_caps.json; new code only).
set -u
swap_old() { mkdir -p /tmp/new && cp backend/codegen.py backend/scalar.py /tmp/new/ \
  && cp .old/backend/codegen.py .old/backend/scalar.py backend/; }
swap_new() { cp /tmp/new/codegen.py /tmp/new/scalar.py backend/; }
if [ "${PART:-rounds}" = caps ]; then  # every preset's fused kernel, registers capped at 32
  python bench/ops_gpu.py --only ceiling,pipelines --variants fused,fused-r32 \
    --check-rows 65536 --pipelines kaggle,terabyte,wide-2x,wide-4x,multihot,heavy \
    --out "$OUT/ops_caps" 2>&1 | grep -v Warning | tail -2
  mv "$OUT/ops_caps/ops_h200.json" "$OUT/ops_caps.json" && rmdir "$OUT/ops_caps"
  exit 0
fi
if [ "${PART:-rounds}" = ncu ]; then  # hardware counters of each kernel alone, new then old
  for v in new old; do
    [ $v = old ] && swap_old
    ncu --clock-control none --kernel-name regex:"corun_values|alu_kernel|stream_kernel" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section SchedulerStats --section ComputeWorkloadAnalysis \
      --csv --page details python bench/contention_probe.py --out /tmp/x --batches 16384 \
      --launch-once 417,5 > "$OUT/ncu_$v.csv" 2> "$OUT/ncu_$v.err"
    echo "$v: rc $?, $(wc -l < "$OUT/ncu_$v.csv") lines"; tail -3 "$OUT/ncu_$v.err"
  done
  swap_new
  exit 0
fi
if [ "${PART:-rounds}" = ops ]; then
  for v in new old; do
    [ $v = old ] && swap_old
    python bench/ops_gpu.py --only ceiling,pipelines --variants fused --check-rows 65536 \
      --pipelines kaggle,terabyte,wide-2x,wide-4x,multihot,heavy --out "$OUT/ops_$v" 2>&1 \
      | grep -v Warning | tail -3
    mv "$OUT/ops_$v/ops_h200.json" "$OUT/ops_$v.json" && rmdir "$OUT/ops_$v"
  done
  swap_new
  exit 0
fi
ONLY=heavy bash bench/heavy_rounds.sh heavy_ab heavy_ab heavy 3 \
  ideal,gpu-sequential,gpu-overlap,corun 16384:170 8192:150
python bench/contention_probe.py --out "$OUT/new" --reps 12 2>&1 | grep -v Warning
mv "$OUT/new/contention_heavy-fused.json" "$OUT/contention_new.json"
swap_old
python bench/contention_probe.py --out "$OUT/old" --reps 12 2>&1 | grep -v Warning
mv "$OUT/old/contention_heavy-fused.json" "$OUT/contention_old.json"
swap_new
rmdir "$OUT/new" "$OUT/old"
NUMBA_ENABLE_CUDASIM=0 timeout 150 python -m pytest -q -x tests/test_kernels.py \
  -k "preset or chain or warp or slot or ngram or list_op" 2>&1 | tail -3
