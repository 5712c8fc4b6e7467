#!/usr/bin/env bash
# Does the fused kernel's shared-memory carveout decide the hold that a kernel released
# early in the forward puts on the forward's GEMMs (bench/results/kernel_timeline_h200.md)?
# Every kernel the executor binds to the driver given the preferred carveout
# CORUN_SMEM_CARVEOUT (backend/driver.py), on eager heavy-lean b16384: the kernel timeline
# with it set, then ideal, gpu-sequential, corun and corun-3 in rounds without it and
# with it (one execute_gpu.py process each, the same start). With OUT set by the device tool:
#   [CARVEOUT=100] bash bench/carveout_session.sh
# Returns $OUT/carveout.tar: timeline_c<N>/ (traces, timeline.md) and the rounds' json/log.
set -u
c=${CARVEOUT:-100}
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
CORUN_SMEM_CARVEOUT=$c python bench/kernel_timeline.py bench/plans/heavy-lean-b16384 \
  --strategies ideal,corun,corun-3 --iterations 60 --warmup 20 --out "$OUT/timeline_c$c" 2>&1 \
  | stamp | tail -30
files=("timeline_c$c")
for setting in none "$c"; do
  [ "$setting" = none ] && env_set=() || env_set=(CORUN_SMEM_CARVEOUT="$setting")
  env "${env_set[@]}" python bench/execute_gpu.py --matrix heavy-lean --batches 16384 \
    --strategies ideal,gpu-sequential,corun,corun-3 --repeats 2 --iterations 300 --warmup 20 \
    --budget-s "${BUDGET_S:-170}" --out "$OUT/r_$setting" 2>&1 | stamp > "$OUT/rounds_c$setting.log"
  grep -E "===|ms, |Error" "$OUT/rounds_c$setting.log" | paste - - | cut -c1-160
  mv "$OUT/r_$setting/execute_heavy-lean.json" "$OUT/rounds_c$setting.json" && rmdir "$OUT/r_$setting"
  files+=("rounds_c$setting.json" "rounds_c$setting.log")
done
tar -C "$OUT" -cf "$OUT/carveout.tar" "${files[@]}" && (cd "$OUT" && rm -rf "${files[@]}")
