#!/usr/bin/env bash
# The heavy case in rounds: ideal, gpu-sequential, gpu-overlap, corun's committed plans
# (bench/plans/heavy-fused-b*) and RAP's, each strategy once a round, 5 rounds a batch
# size in one process (bench/execute_gpu.py --repeats), so that which strategy is fastest
# is judged against the spread of the host's pace, not one median each. Usage, with OUT
# set by the device tool:
#   bash bench/repeats_session.sh
# Returns $OUT/repeats.tar (execute_heavy_b8192.json, _b16384.json and the logs); render
# with python bench/render_repeats.py.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
for pair in 8192:230 16384:270; do
  b=${pair%:*}
  python bench/execute_gpu.py --matrix heavy --batches "$b" --iterations 300 --warmup 20 \
    --repeats "${ROUNDS:-5}" --strategies ideal,gpu-sequential,gpu-overlap,corun,rap \
    --budget-s "${pair#*:}" --out "$OUT/b$b" 2>&1 | stamp > "$OUT/execute_heavy_b$b.log"
  grep -E "===|ms, |Error" "$OUT/execute_heavy_b$b.log" | paste - - | cut -c1-150
  mv "$OUT/b$b/execute_heavy.json" "$OUT/execute_heavy_b$b.json" && rmdir "$OUT/b$b"
done
tar -C "$OUT" -cf "$OUT/repeats.tar" execute_heavy_b8192.json execute_heavy_b16384.json \
  execute_heavy_b8192.log execute_heavy_b16384.log && rm -f "$OUT"/execute_heavy_*
