#!/usr/bin/env bash
# The heavy case with kernels that write long lists a warp per row (FusedKernel.warp_rows),
# in one device call: (1) profile heavy-fused against heavy's kernels, each launch shape
# both ways (a thread and a warp per row), and mlperf-dcnv2 against multihot's; (2) fit
# the H200 model with those rows (costmodel/data/h200/profile-warp.csv) and replan
# heavy-fused at 8192 and 16384; (3) execute the heavy matrix with the new plans, the
# baselines both ways ("+thread"). Usage, with OUT set by the device tool:
#   bash bench/warp_session.sh            (all three)
#   PART=profile bash bench/warp_session.sh   (step 1, then a repeat of the b8192 baselines)
#   PART=refine bash bench/warp_session.sh    (with profile-warp.csv committed: plan, profile
#     the plans' kernels, refit, plan again (bench/refine_plans.py, 3 rounds), then the
#     heavy matrix with the final plans)
# What to commit comes back in $OUT/warp.tar (the device tool returns few files):
# profile-warp.csv, model.*, plans/, execute_heavy.json and the logs.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
mkdir -p "$OUT/profile" "$OUT/plans"
if [ "${PART:-all}" = refine ]; then
  python bench/refine_plans.py --model heavy-fused --pipeline heavy --batches 8192,16384 \
    --rounds 3 --time-limit 8 --out "$OUT/refine" 2>&1 | stamp > "$OUT/refine.log"
  grep -E "round|converged" "$OUT/refine.log"
  cp costmodel/data/h200/profile-refine-heavy-fused*.csv costmodel/data/h200/model.json \
    "$OUT/refine/"
  python bench/execute_gpu.py --matrix heavy --batches 8192,16384 --iterations 100 \
    --warmup 10 --strategies ideal,gpu-sequential,gpu-overlap,corun --budget-s 150 \
    --out "$OUT" 2>&1 | stamp > "$OUT/execute_heavy.log"
  grep -E "===|ms, |Error" "$OUT/execute_heavy.log"
  tar -C "$OUT" -cf "$OUT/warp.tar" refine execute_heavy.json execute_heavy.log \
    && rm -rf "$OUT/refine" "$OUT/execute_heavy.json" "$OUT/profile" "$OUT/plans"
  exit 0
fi
python -m corun.cli profile --out "$OUT/profile" --models heavy-fused --train-pipeline heavy \
  --pipelines heavy --batches 8192,16384 --shapes 6 --launches 2 --reps 3 \
  --mappings thread,warp --budget-minutes 2.5 2>&1 | tail -3
python -m corun.cli profile --out "$OUT/profile" --models mlperf-dcnv2 --pipelines multihot \
  --batches 8192 --shapes 4 --launches 2 --reps 3 --mappings thread,warp \
  --budget-minutes 1.2 2>&1 | tail -3
if [ "${PART:-all}" = profile ]; then
  python bench/execute_gpu.py --matrix heavy --batches 8192 --iterations 100 --warmup 10 \
    --strategies ideal,gpu-sequential,gpu-overlap,gpu-sequential+thread,gpu-overlap+thread \
    --budget-s 120 --out "$OUT" 2>&1 | stamp > "$OUT/execute_heavy.log"
  grep -E "===|ms, |Error" "$OUT/execute_heavy.log"
  tar -C "$OUT" -cf "$OUT/warp.tar" profile execute_heavy.json execute_heavy.log \
    && rm -rf "$OUT/profile" "$OUT/execute_heavy.json"
  exit 0
fi
cp "$OUT/profile/profile.csv" costmodel/data/h200/profile-warp.csv
python -m corun.cli fit costmodel/data/h200 -o costmodel/data/h200/model.pkl 2>&1 | tail -16
cp costmodel/data/h200/model.pkl costmodel/data/h200/model.json "$OUT/"
for b in 8192 16384; do
  python -m corun.cli plan --hardware h200 --gpus 1 --pipeline heavy --model heavy-fused \
    --batch "$b" --time-limit 10 --quiet --out "bench/plans/heavy-fused-b$b" \
    > "bench/plans/heavy-fused-b$b.txt" 2>&1
  rm -f bench/plans/heavy-fused-b$b/trace-*.json
  cp -r "bench/plans/heavy-fused-b$b" "bench/plans/heavy-fused-b$b.txt" "$OUT/plans/"
  tail -14 "bench/plans/heavy-fused-b$b.txt"
done
python bench/execute_gpu.py --matrix heavy --batches 8192,16384 --iterations 100 --warmup 10 \
  --strategies ideal,gpu-sequential,gpu-overlap,corun,gpu-sequential+thread,gpu-overlap+thread,rap \
  --budget-s "${EXEC_S:-270}" --out "$OUT" 2>&1 | stamp > "$OUT/execute_heavy.log"
grep -E "===|ms, |Error" "$OUT/execute_heavy.log"
tar -C "$OUT" -cf "$OUT/warp.tar" profile plans model.pkl model.json execute_heavy.json \
  execute_heavy.log && rm -rf "$OUT/profile" "$OUT/plans" "$OUT"/model.* "$OUT/execute_heavy.json"
