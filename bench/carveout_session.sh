#!/usr/bin/env bash
# Does the fused kernel's shared-memory carveout decide the hold that a kernel released
# early in the forward puts on the forward's GEMMs (bench/results/kernel_timeline_h200.md)?
# Every kernel the executor binds to the driver given the preferred carveout
# CORUN_SMEM_CARVEOUT (backend/driver.py), on eager heavy-lean b16384: the kernel timeline
# with it set, then ideal, gpu-sequential, corun and corun-3 in rounds without it and
# with it (bench/heavy_rounds.sh: one execute_gpu.py process each, the same start). With
# OUT set by the device tool:
#   [CARVEOUT=100] bash bench/carveout_session.sh
# Returns $OUT/carveout.tar (timeline_c<N>/: traces, timeline.md) and
# $OUT/carveout_rounds_{none,c<N>}.tar (execute_c<setting>_b16384.json and .log).
# Session 43's records (bench/results/raw/carveout_run1/rounds_c{none,100}.*) came from
# this script's first form at 30b21c25: the same commands, the files named so.
set -u
c=${CARVEOUT:-100}
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
CORUN_SMEM_CARVEOUT=$c python bench/kernel_timeline.py bench/plans/heavy-lean-b16384 \
  --strategies ideal,corun,corun-3 --iterations 60 --warmup 20 --out "$OUT/timeline_c$c" 2>&1 \
  | tail -30
tar -C "$OUT" -cf "$OUT/carveout.tar" "timeline_c$c" && rm -rf "$OUT/timeline_c$c"
rounds=(heavy-lean 2 ideal,gpu-sequential,corun,corun-3 "16384:${BUDGET_S:-170}")
bash bench/heavy_rounds.sh carveout_rounds_none cnone "${rounds[@]}"
CORUN_SMEM_CARVEOUT=$c bash bench/heavy_rounds.sh "carveout_rounds_c$c" "c$c" "${rounds[@]}"
