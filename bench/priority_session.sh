#!/usr/bin/env bash
# Does the stream priority decide gpu-overlap's lead over corun's heavy plans? gpu-overlap
# runs its kernel level with training (sim.strategy: training_priority_high False), corun's
# plans put training first; the profile that the learned model is fitted on always put
# training first. In rounds (bench/execute_gpu.py --repeats), each plan both ways
# ("+high" / "+low"). Usage, with OUT set by the device tool:
#   bash bench/priority_session.sh
# Returns $OUT/priority.tar; render with python bench/render_repeats.py.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
for pair in 8192:140 16384:200; do
  b=${pair%:*}
  python bench/execute_gpu.py --matrix heavy --batches "$b" --iterations 300 --warmup 20 \
    --repeats "${ROUNDS:-5}" \
    --strategies ideal,gpu-sequential,gpu-overlap,gpu-overlap+high,corun,corun+low \
    --budget-s "${pair#*:}" --out "$OUT/b$b" 2>&1 | stamp > "$OUT/execute_heavy_b$b.log"
  grep -E "===|ms, |Error" "$OUT/execute_heavy_b$b.log" | paste - - | cut -c1-130
  mv "$OUT/b$b/execute_heavy.json" "$OUT/execute_heavy_b$b.json" && rmdir "$OUT/b$b"
done
tar -C "$OUT" -cf "$OUT/priority.tar" execute_heavy_b8192.json execute_heavy_b16384.json \
  execute_heavy_b8192.log execute_heavy_b16384.log && rm -f "$OUT"/execute_heavy_*
