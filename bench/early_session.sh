#!/usr/bin/env bash
# Does a kernel whose blocks reach the GPU before emb_fwd's hide better than one released
# with it? Released at emb_fwd, the heavy kernel's blocks wait behind emb_fwd's and run
# on into the small MLP stages (bench/results/heavy_rounds_h200.md); released at the
# optimizer, two batches ahead (Plan.batches_ahead = 2, "+ahead2"), they are on the SMs
# first and emb_fwd takes the rest. "+b<N>": N blocks, fewer slots held. In rounds
# (bench/execute_gpu.py --repeats). Usage, with OUT set by the device tool:
#   bash bench/early_session.sh
# Returns $OUT/early.tar; render with python bench/render_repeats.py.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
for pair in 8192:110 16384:170; do
  b=${pair%:*}
  python bench/execute_gpu.py --matrix heavy-stages --batches "$b" --iterations 300 \
    --warmup 20 --repeats "${ROUNDS:-3}" --strategies ideal,gpu-sequential,at:emb_fwd,\
at:emb_fwd+ahead2,at:optimizer+ahead2,at:optimizer+ahead2+b528,at:optimizer+ahead2+b264 \
    --budget-s "${pair#*:}" --out "$OUT/b$b" 2>&1 | stamp > "$OUT/execute_early_b$b.log"
  grep -E "===|ms, |Error" "$OUT/execute_early_b$b.log" | paste - - | cut -c1-130
  mv "$OUT/b$b/execute_heavy-stages.json" "$OUT/execute_early_b$b.json" && rmdir "$OUT/b$b"
done
tar -C "$OUT" -cf "$OUT/early.tar" execute_early_b8192.json execute_early_b16384.json \
  execute_early_b8192.log execute_early_b16384.log && rm -f "$OUT"/execute_early_*
