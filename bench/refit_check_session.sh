#!/usr/bin/env bash
# The one-GPU plans the refit of 2026-12-01 moved (heavy-fused profiled again with the
# profiler's trainer built first: bench/reprofile_session.sh), executed before anything is
# fitted on them: the plans matrix on kaggle, terabyte, wide-2x and wide-4x (one round, as
# run 21), then heavy-fused b16384 in rounds in two processes (which of emb_bwd's two
# speeds ideal gets varies by process: bench/results/tune_h200.md, run 3). With OUT set by
# the device tool:
#   bash bench/refit_check_session.sh
# returns $OUT/refit_check.tar.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
nvidia-smi --query-gpu=name,clocks.sm,memory.used --format=csv,noheader
python bench/execute_gpu.py --matrix plans --only kaggle,terabyte,wide-2x,wide-4x \
  --budget-s 200 --out "$OUT/plans" 2>&1 | stamp > "$OUT/execute_plans_refit.log"
grep -E "ms, " "$OUT/execute_plans_refit.log" | cut -c14-140
mv "$OUT/plans/execute_plans.json" "$OUT/execute_plans_refit.json" && rmdir "$OUT/plans"
heavy="ideal,gpu-sequential,corun,corun-2,corun-3,at:interaction_bwd+ahead2+b66+thread"
for p in a b; do
  ONLY=heavy bash bench/heavy_rounds.sh "refit_$p" "refit_$p" heavy-stages "${ROUNDS:-3}" \
    "$heavy" 16384:130
done
tar -C "$OUT" -cf "$OUT/refit_check.tar" execute_plans_refit.json execute_plans_refit.log \
  refit_a.tar refit_b.tar && rm -f "$OUT"/execute_plans_refit.* "$OUT"/refit_?.tar
