#!/usr/bin/env bash
# Issue 6's heavy case on one H200: the heavy pipeline beside the heavy model trained with
# the fused embedding update (model heavy-fused). One device call per part:
#   PART=explore  what the embedding backward costs per id (bench/embedding_update.py),
#                 the baselines at large batches (where gpu-sequential falls short of
#                 ideal), and the co-running profile of heavy-fused's stages
#                 (corun profile, appended to a copy of costmodel/data/h200/profile.csv)
#   PART=plans    the heavy matrix: ideal, gpu-sequential, gpu-overlap, RAP's plan and
#                 corun's (bench/plans/heavy-fused-b<batch>/, bench/plans/make.sh)
#   PART=refine   plan, profile what the plans launch, refit, plan again until every
#                 kernel was profiled (bench/refine_plans.py), then execute those plans
#                 beside ideal, gpu-sequential and gpu-overlap; one archive, refine.tgz
# Usage, from the repository root with OUT set by the device tool:
#   PART=explore bash bench/heavy_session.sh
set -u
PART=${PART:-explore}
mkdir -p "$OUT/logs"
stamp() { python -u -c "import sys,time; t=time.time(); [print(f'{time.time()-t:7.1f} {l}', end='', flush=True) for l in sys.stdin]"; }
nvidia-smi --query-gpu=index,name,memory.used --format=csv > "$OUT/logs/gpus.txt"
if [ "$PART" = explore ]; then
  python bench/embedding_update.py --out "$OUT" 2>&1 | stamp > "$OUT/logs/embedding_update.log"
  python bench/execute_gpu.py --matrix heavy --strategies ideal,gpu-sequential,gpu-overlap \
    --batches "${BATCHES:-16384,32768}" --budget-s "${EXEC_S:-150}" --out "$OUT" 2>&1 | stamp \
    > "$OUT/logs/execute_heavy.log"
  mkdir -p "$OUT/profile"
  cp costmodel/data/h200/profile.csv "$OUT/profile/"
  python -m corun.cli profile --out "$OUT/profile" --models heavy-fused --train-pipeline heavy \
    --pipelines heavy --batches "${PROFILE_BATCHES:-8192,16384,32768}" --shapes 6 \
    --launches 2 --reps 3 --budget-minutes "${PROFILE_MIN:-3}" 2>&1 | stamp \
    > "$OUT/logs/profile.log"
elif [ "$PART" = replan ]; then
  mkdir -p "$OUT/profile" "$OUT/plans"
  cp costmodel/data/h200/profile.csv "$OUT/profile/"
  PLANS=bench/plans/heavy-fused-one-kernel.json
  for b in 8192 16384 32768; do PLANS="$PLANS,bench/plans/heavy-fused-b$b/plan.json"; done
  python -m corun.cli profile --out "$OUT/profile" --models heavy-fused --train-pipeline heavy \
    --batches 8192,16384,32768 --shapes 0 --reps 3 --plans "$PLANS" --budget-minutes 2 2>&1 \
    | stamp > "$OUT/logs/profile.log"
  cp "$OUT/profile/profile.csv" costmodel/data/h200/profile.csv
  python -m corun.cli fit costmodel/data/h200 -o costmodel/data/h200/model.pkl 2>&1 | stamp \
    > "$OUT/logs/fit.log"
  cp costmodel/data/h200/model.json "$OUT/plans/"
  for b in $(echo "${BATCHES:-8192,16384}" | tr , ' '); do
    python -m corun.cli plan --hardware h200 --gpus 1 --pipeline heavy --model heavy-fused \
      --batch "$b" --time-limit 10 --quiet --out "bench/plans/heavy-fused-b$b" \
      > "bench/plans/heavy-fused-b$b.txt" 2>&1
    rm -f bench/plans/heavy-fused-b$b/trace-*.json
    cp -r "bench/plans/heavy-fused-b$b" "bench/plans/heavy-fused-b$b.txt" "$OUT/plans/"
  done
  python bench/execute_gpu.py --matrix heavy --batches "${BATCHES:-8192,16384}" \
    --strategies ideal,gpu-sequential,gpu-overlap,corun --budget-s "${EXEC_S:-200}" --out "$OUT" \
    2>&1 | stamp > "$OUT/logs/execute_heavy.log"
  tar czf "$OUT/replan.tgz" -C "$OUT" profile plans && rm -rf "$OUT/profile" "$OUT/plans"
elif [ "$PART" = refine ]; then
  # plan, profile the plan's unprofiled kernels, refit, plan again (bench/refine_plans.py),
  # then execute the final plans beside the baselines
  python bench/refine_plans.py --model heavy-fused --pipeline heavy \
    --batches "${BATCHES:-8192,16384}" --rounds "${ROUNDS:-3}" --time-limit "${PLAN_S:-8}" \
    --out "$OUT/refine" 2>&1 | stamp > "$OUT/logs/refine.log"
  cp costmodel/data/h200/profile-refine-heavy-fused.csv costmodel/data/h200/model.json \
    "$OUT/refine/" 2>/dev/null
  python bench/execute_gpu.py --matrix heavy --batches "${BATCHES:-8192,16384}" \
    --strategies ideal,gpu-sequential,gpu-overlap,corun --budget-s "${EXEC_S:-200}" --out "$OUT" \
    2>&1 | stamp > "$OUT/logs/execute_heavy.log"
  tar czf "$OUT/refine.tgz" -C "$OUT" refine && rm -rf "$OUT/refine"
elif [ "$PART" = stages ]; then
  python bench/execute_gpu.py --matrix heavy-stages --budget-s "${EXEC_S:-330}" --out "$OUT" \
    2>&1 | stamp > "$OUT/logs/execute_heavy_stages.log"
else
  python bench/execute_gpu.py --matrix heavy --budget-s "${EXEC_S:-420}" --out "$OUT" 2>&1 \
    | stamp > "$OUT/logs/execute_heavy.log"
fi
