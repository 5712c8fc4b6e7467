#!/usr/bin/env bash
# One lent H200, for the assemblies' own stream (backend/streams.py Streams.assembly):
# graphed heavy-rehash b16384, whose choice (132 blocks at bottom_mlp_fwd, two ahead) had
# started its kernel 0.11 ms late in every other step behind the previous batch's
# assembly (run 12, bench/results/rehash_h200.md), tuned again with every runner-up; then
# graphed b32768's choice, which recovered the gap in run 9, beside ideal and
# gpu-sequential, to see it keep that; then the GPU tests of the graphed step, the batch
# graphs and the streams. With OUT set by the device tool:
#   bash bench/assembly_stream_session.sh
# returns $OUT/assembly-stream.tar (raw records gzipped, logs).
set -u
root="$OUT/assembly-stream"
rm -rf "$root" && mkdir -p "$root"
PART=b16384-graphs ROUNDS=${ROUNDS:-2} BUDGET_S=${BUDGET_S:-200} OUT="$root" \
  bash bench/rehash_session.sh
rc=$?
out="$root/b32768-graphs"
python -m corun.cli tune bench/plans/rehash/heavy-lean-b32768-graphs \
  --strategies ideal,gpu-sequential,corun --no-launch-steps --no-lead-variant \
  --rounds 2 --iterations 300 --warmup 20 --budget-s 120 -o "$out" > "$out.log" 2>&1 \
  || rc=$?
grep -vE "^ *(iteration|round)|compiling|preparing|batches and" "$out.log" | tail -12
rm -rf "$out/rounds"
gzip -9n "$out"/*.json 2>/dev/null
NUMBA_ENABLE_CUDASIM=0 timeout 240 python -m pytest -q -x -p no:cacheprovider \
  tests/test_graphed.py tests/test_batch_graphs.py tests/test_sm_split.py \
  > "$root/gpu-tests.log" 2>&1 || rc=$?
tail -3 "$root/gpu-tests.log"
tar -C "$OUT" -cf "$OUT/assembly-stream.tar" assembly-stream && rm -rf "$root"
exit $rc
