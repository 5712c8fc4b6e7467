#!/usr/bin/env bash
# The heavy case with the baselines' and the planner's first kernels profiled as they
# launch: the whole heavy pipeline in one kernel at 132-2112 blocks of 256 threads, a warp
# and a thread per row, beside every heavy-fused stage at 8192 and 16384
# (bench/launch_plans.py, corun profile --plans). Before, the learned model predicted the
# gpu-overlap kernel (1056 blocks, a warp per row) at 0.61 ms alone against 0.36 measured,
# and ranked corun's plan above gpu-overlap where it measured below. Then: refit, refine
# the plans (bench/refine_plans.py, 2 rounds) and execute the heavy matrix with them.
# One device call; usage, with OUT set by the device tool:
#   bash bench/launch_session.sh
# What to commit comes back in $OUT/launch.tar: profile-launches.csv, the refine folder
# (its log, rows and plans), execute_heavy.json and the logs.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
mkdir -p "$OUT/profile" "$OUT/refine"
plans=$(python bench/launch_plans.py --pipeline heavy --model heavy-fused \
  --blocks 132,264,528,1056,2112 --out /tmp/launch-plans) || exit 1
python -m corun.cli profile --out "$OUT/profile" --models heavy-fused --train-pipeline heavy \
  --pipelines heavy --batches 8192,16384 --shapes 0 --plans "$plans" --reps 3 \
  --budget-minutes 3 2>&1 | stamp > "$OUT/profile.log"
tail -2 "$OUT/profile.log"
cp "$OUT/profile/profile.csv" costmodel/data/h200/profile-launches.csv
python -m corun.cli fit costmodel/data/h200 -o costmodel/data/h200/model.pkl 2>&1 \
  | stamp > "$OUT/fit.log"
tail -12 "$OUT/fit.log"
python bench/refine_plans.py --model heavy-fused --pipeline heavy --batches 8192,16384 \
  --rounds 2 --time-limit 8 --out "$OUT/refine" 2>&1 | stamp > "$OUT/refine.log"
grep -E "round|converged" "$OUT/refine.log"
cp costmodel/data/h200/profile-refine-heavy-fused*.csv "$OUT/refine/"
cp -r bench/plans/heavy-fused-b8192 bench/plans/heavy-fused-b16384 \
  bench/plans/heavy-fused-b8192.txt bench/plans/heavy-fused-b16384.txt "$OUT/refine/"
python bench/execute_gpu.py --matrix heavy --batches 8192,16384 --iterations 100 \
  --warmup 10 --strategies ideal,gpu-sequential,gpu-overlap,corun,rap --budget-s 200 \
  --out "$OUT" 2>&1 | stamp > "$OUT/execute_heavy.log"
grep -E "===|ms, |Error" "$OUT/execute_heavy.log"
tar -C "$OUT" -cf "$OUT/launch.tar" profile refine profile.log fit.log refine.log \
  execute_heavy.json execute_heavy.log \
  && rm -rf "$OUT/profile" "$OUT/refine" "$OUT"/*.log "$OUT/execute_heavy.json"
