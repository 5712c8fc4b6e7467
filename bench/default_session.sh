#!/usr/bin/env bash
# The README's main job plans kaggle at batch 4096 (the built-in default) and says its
# next-best schedules are predicted within the simulator's error of the chosen all-CPU
# plan (corun plan --runners-up 2 -> bench/plans/kaggle-b4096/plan-2.json, plan-3.json).
# Measure them beside it, with ideal and gpu-sequential, in rounds (bench/execute_gpu.py
# --repeats). STRATEGIES, ROUNDS and BUDGET_S change what runs ("+w<N>": N host workers
# instead of one per host core). Usage, with OUT set by the device tool:
#   bash bench/default_session.sh
# Run 1 took the defaults; run 2:
#   ROUNDS=2 STRATEGIES=ideal,gpu-sequential,corun,corun+w8,corun+w4 bash bench/default_session.sh
# Returns $OUT/default.tar; render with python bench/render_repeats.py.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
python bench/execute_gpu.py --matrix plans --only kaggle --batches 4096 --iterations 300 \
  --warmup 20 --repeats "${ROUNDS:-4}" --strategies "${STRATEGIES:-ideal,gpu-sequential,corun,corun-2,corun-3}" \
  --budget-s "${BUDGET_S:-400}" --out "$OUT/b4096" 2>&1 | stamp > "$OUT/execute_default_b4096.log"
grep -E "===|ms, |Error" "$OUT/execute_default_b4096.log" | paste - - | cut -c1-150
mv "$OUT/b4096/execute_plans.json" "$OUT/execute_default_b4096.json" && rmdir "$OUT/b4096"
tar -C "$OUT" -cf "$OUT/default.tar" execute_default_b4096.json execute_default_b4096.log \
  && rm -f "$OUT"/execute_default_b4096.*
