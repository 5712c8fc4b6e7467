#!/usr/bin/env bash
# The fused kernels with slot constants hoisted and ngram's index in 32 bits (new)
# against the code before (old), on the H200, in one command:
#   mkdir -p .old/backend && git show aa3e82a:backend/codegen.py > .old/backend/codegen.py \
#     && git show aa3e82a:backend/scalar.py > .old/backend/scalar.py   # here, once
#   bash bench/kernel_ab_session.sh        # there, with .old carried
# 1. the heavy case in rounds with the new kernels (bench/heavy_rounds.sh);
# 2. bench/contention_probe.py with the new kernels, then with the old ones swapped in
#    (contention_new.json, contention_old.json: each kernel alone and beside each stage);
# 3. the kernel tests on the GPU (tests/test_kernels.py, simulator off).
set -u
ONLY=heavy bash bench/heavy_rounds.sh heavy_ab heavy_ab heavy 3 \
  ideal,gpu-sequential,gpu-overlap,corun 16384:170 8192:150
python bench/contention_probe.py --out "$OUT/new" --reps 12 2>&1 | grep -v Warning
mv "$OUT/new/contention_heavy-fused.json" "$OUT/contention_new.json"
mkdir -p /tmp/new && cp backend/codegen.py backend/scalar.py /tmp/new/
cp .old/backend/codegen.py .old/backend/scalar.py backend/
python bench/contention_probe.py --out "$OUT/old" --reps 12 2>&1 | grep -v Warning
mv "$OUT/old/contention_heavy-fused.json" "$OUT/contention_old.json"
cp /tmp/new/codegen.py /tmp/new/scalar.py backend/
rmdir "$OUT/new" "$OUT/old"
NUMBA_ENABLE_CUDASIM=0 timeout 150 python -m pytest -q -x tests/test_kernels.py \
  -k "preset or chain or warp or slot or ngram or list_op" 2>&1 | tail -3
