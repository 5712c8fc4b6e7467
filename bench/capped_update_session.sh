#!/usr/bin/env bash
# Issue 6's heavy case with the fused embedding update's grid capped
# (backend/embedding_sgd.py, UPDATE_BLOCKS_PER_SM): one device call per part, from the
# repository root with OUT set by the device tool.
#   PART=rounds   heavy-stages in 3 rounds at b16384 and b8192: ideal with the capped and
#                 the uncapped update, gpu-sequential likewise, and the whole pipeline
#                 released at emb_fwd (gpu-overlap's kernel), interaction_bwd and emb_bwd
#                 (also at 132 blocks): $OUT/capped.tar
#   PART=ahead    b16384: those with the batch unchecked and two batches ahead:
#                 $OUT/capped_ahead.tar
#   PART=profile  heavy-fused's co-running profile with the capped update (the rows the
#                 uncapped update measured moved to costmodel/data/h200/uncapped-update/),
#                 refit, replan b8192/b16384, and the plans in 2 rounds beside the
#                 baselines: $OUT/capped_profile.tar, $OUT/capped_plans.tar
#   PART=refine   plan, profile the plans' unprofiled kernels, refit, replan
#                 (bench/refine_plans.py), then those plans in 3 rounds beside the
#                 baselines: $OUT/capped_refine.tar, $OUT/capped_refined.tar
#   PART=thin     b16384: the refined plan one and two batches ahead, and at 66 blocks
#                 two ahead: $OUT/capped_thin.tar
#   PART=plans    the committed plans in 3 rounds beside the baselines: $OUT/capped_plans.tar
set -u
PART=${PART:-rounds}
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
if [ "$PART" = rounds ]; then
  bash bench/heavy_rounds.sh capped capped heavy-stages "${ROUNDS:-3}" \
    "ideal,ideal+uncapped,gpu-sequential,gpu-sequential+uncapped,at:emb_fwd,at:interaction_bwd,at:emb_bwd,at:emb_bwd+b132" \
    16384:230 8192:200
elif [ "$PART" = ahead ]; then
  # where the co-run's cost goes at b16384: the batch's assembly and check (+nocheck),
  # and the next step waiting for the batch (+ahead2: the kernels two batches ahead)
  bash bench/heavy_rounds.sh capped_ahead capped_ahead heavy-stages "${ROUNDS:-3}" \
    "ideal,gpu-sequential,gpu-sequential+nocheck,at:emb_fwd,at:emb_fwd+nocheck,at:emb_fwd+ahead2,at:interaction_bwd+ahead2,at:emb_bwd+ahead2,at:emb_bwd+ahead2+nocheck" \
    16384:280
elif [ "$PART" = profile ]; then
  # profile heavy-fused again (random kernels, and the whole pipeline at every launch
  # shape), refit, replan b8192/b16384, then the plans in 2 rounds beside the baselines
  stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
  D=costmodel/data/h200
  mkdir -p "$OUT/capped" "$OUT/launches" "$OUT/plans"
  python -m corun.cli profile --out "$OUT/capped" --models heavy-fused --train-pipeline heavy \
    --pipelines heavy --batches 8192,16384,32768 --shapes 6 --launches 2 \
    --mappings thread,warp --reps 3 --budget-minutes 2.5 2>&1 | stamp > "$OUT/capped.log"
  tail -2 "$OUT/capped.log"
  plans=$(python bench/launch_plans.py --pipeline heavy --model heavy-fused \
    --blocks 132,264,528,1056,2112 --out /tmp/launch-plans) || exit 1
  python -m corun.cli profile --out "$OUT/launches" --models heavy-fused --train-pipeline heavy \
    --pipelines heavy --batches 8192,16384 --shapes 0 --plans "$plans" --reps 3 \
    --budget-minutes 1.5 2>&1 | stamp > "$OUT/launches.log"
  tail -2 "$OUT/launches.log"
  cp "$OUT/capped/profile.csv" $D/profile-capped-update.csv
  cp "$OUT/launches/profile.csv" $D/profile-capped-launches.csv
  python -m corun.cli fit $D -o $D/model.pkl 2>&1 | stamp > "$OUT/fit.log"
  tail -14 "$OUT/fit.log"
  cp $D/model.pkl $D/model.json $D/model-heldout.png $D/model-heldout.svg "$OUT/plans/"
  for b in 8192 16384; do
    python -m corun.cli plan --hardware h200 --gpus 1 --pipeline heavy --model heavy-fused \
      --batch "$b" --time-limit 10 --quiet --out "bench/plans/heavy-fused-b$b" \
      > "bench/plans/heavy-fused-b$b.txt" 2>&1
    rm -f bench/plans/heavy-fused-b$b/trace-*.json
    cp -r "bench/plans/heavy-fused-b$b" "bench/plans/heavy-fused-b$b.txt" "$OUT/plans/"
    sed -n '/^strategy/,/^corun /p' "bench/plans/heavy-fused-b$b.txt"
  done
  bash bench/heavy_rounds.sh capped_plans capped_plans heavy "${ROUNDS:-2}" \
    ideal,gpu-sequential,gpu-overlap,corun,corun+ahead2 16384:140 8192:110
  tar -C "$OUT" -cf "$OUT/capped_profile.tar" capped launches plans capped.log launches.log \
    fit.log && rm -rf "$OUT/capped" "$OUT/launches" "$OUT/plans" "$OUT"/*.log
elif [ "$PART" = refine ]; then
  # plan, profile what the plans launch and no row has, refit, plan again
  # (bench/refine_plans.py; the search now also tries two batches ahead), then the final
  # plans in 3 rounds beside the baselines
  D=costmodel/data/h200
  python bench/refine_plans.py --model heavy-fused --pipeline heavy --batches 8192,16384 \
    --rounds "${REFINE_ROUNDS:-2}" --time-limit 8 --out "$OUT/refine" > "$OUT/refine.log" 2>&1
  grep -E "round|converged|profil" "$OUT/refine.log" | tail -12
  cp $D/profile-refine-heavy-fused*.csv $D/model.pkl $D/model.json $D/model-heldout.png \
    $D/model-heldout.svg "$OUT/refine/"
  cp -r bench/plans/heavy-fused-b8192 bench/plans/heavy-fused-b16384 \
    bench/plans/heavy-fused-b8192.txt bench/plans/heavy-fused-b16384.txt "$OUT/refine/"
  for b in 8192 16384; do sed -n '/^gpu-seq/,/^corun /p;/released at/,$p' \
    "bench/plans/heavy-fused-b$b.txt"; done
  bash bench/heavy_rounds.sh capped_refined capped_refined heavy "${ROUNDS:-3}" \
    ideal,gpu-sequential,gpu-overlap,corun 16384:150 8192:120
  tar -C "$OUT" -cf "$OUT/capped_refine.tar" refine refine.log && rm -rf "$OUT/refine" \
    "$OUT/refine.log"
elif [ "$PART" = thin ]; then
  # the refined plan beside itself two batches ahead, and at 66 blocks (the shape of
  # PART=profile's plan, which measured best two batches ahead there)
  bash bench/heavy_rounds.sh capped_thin capped_thin heavy "${ROUNDS:-3}" \
    ideal,gpu-sequential,gpu-overlap+ahead2,corun,corun+ahead2,corun+ahead2+b66 16384:260
else
  bash bench/heavy_rounds.sh capped_plans capped_plans heavy "${ROUNDS:-3}" \
    ideal,gpu-sequential,gpu-overlap,corun 16384:200 8192:170
fi
