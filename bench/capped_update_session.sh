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
#                 uncapped update measured no longer hold): $OUT/profile/profile.csv
#   PART=plans    corun's plans (bench/plans/heavy-fused-b<batch>/, refitted and replanned
#                 on those rows) in 3 rounds beside the baselines: $OUT/capped_plans.tar
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
  mkdir -p "$OUT/profile"
  PLANS=bench/plans/heavy-fused-one-kernel.json
  python -m corun.cli profile --out "$OUT/profile" --models heavy-fused --train-pipeline heavy \
    --pipelines heavy --batches 8192,16384,32768 --shapes 6 --launches 2 --mappings both \
    --reps 3 --budget-minutes "${PROFILE_MIN:-4}" 2>&1 | tail -5
  python -m corun.cli profile --out "$OUT/profile" --models heavy-fused --train-pipeline heavy \
    --batches 8192,16384,32768 --shapes 0 --reps 3 --plans "$PLANS" --budget-minutes 2 \
    2>&1 | tail -3
else
  bash bench/heavy_rounds.sh capped_plans capped_plans heavy "${ROUNDS:-3}" \
    ideal,gpu-sequential,gpu-overlap,corun 16384:200 8192:170
fi
