#!/usr/bin/env bash
# Co-running profiles with the kernel resident before its stage starts (`corun profile
# --resident`, backend/profile.py LeadClock), for the learned model's resident rates
# (costmodel/learned.py): the case of a kernel carried from the stage that released it
# into the next ones. One device run (about 9 minutes), from the repository root:
#   PART=profile bash bench/resident_session.sh
# heavy-lean first (the whole heavy-small pipeline at 132-2112 blocks, and the random
# kernels its launched profile drew), both kinds of row for the 198-block kernel; then
# the Criteo-like models' random kernels at b8192 as far as the budget goes. Writes
# $OUT/{heavy,criteo}/resident.csv (and profile.csv for the launched 198-block rows).
#   PART=thin bash bench/resident_session.sh
# heavy-lean's whole pipeline at 132-1056 blocks (198 and 396 among them), both row
# mappings, b16384 and b24576, each launched and resident, in 11 steps a pair (3 before:
# emb_bwd's time alone swings by 10-15% from step to step, more than a thin kernel
# slows it). Writes $OUT/thin/{profile,resident}.csv (about 4 minutes).
#   PART=leads bash bench/resident_session.sh
# the same kernels resident 0.1, 0.25 and 0.5 ms before each stage (--lead-ms): a kernel
# part done, as one carried from an earlier stage is. Writes $OUT/leads/resident.csv.
#   PART=graphed bash bench/resident_session.sh
# the same kernels beside the step replayed as CUDA graphs (--cuda-graphs), launched and
# resident 0.01 and 0.25 ms before the stage, b16384. Writes $OUT/graphed/graphed-*.csv.
#   PART=steps bash bench/resident_session.sh
# the same kernels launched beside the graphed step at b16384 and b24576, every stage of
# the steps that released them recorded (step_stage_ms). Writes $OUT/steps/graphed-profile.csv.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
case "${PART:-profile}" in
profile)
  lean=(--models heavy-lean --train-pipeline heavy-small --pipelines heavy-small --reps 3
        --batches 16384,8192)
  plans=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 132,198,264,528,1056,2112 --out /tmp/launch-plans) || exit 1
  python -m corun.cli profile --out "$OUT/heavy" "${lean[@]}" --resident --shapes 0 \
    --plans "$plans" --budget-minutes 2 2>&1 | stamp > "$OUT/heavy-launches.log"
  tail -2 "$OUT/heavy-launches.log"
  thin=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 198 --out /tmp/thin-plans) || exit 1
  python -m corun.cli profile --out "$OUT/heavy" "${lean[@]}" --shapes 0 --plans "$thin" \
    --budget-minutes 1 2>&1 | stamp > "$OUT/heavy-thin.log"
  tail -2 "$OUT/heavy-thin.log"
  python -m corun.cli profile --out "$OUT/heavy" "${lean[@]}" --resident --shapes 5 \
    --launches 2 --mappings thread,warp --budget-minutes 1.5 2>&1 | stamp > "$OUT/heavy-random.log"
  tail -2 "$OUT/heavy-random.log"
  python -m corun.cli profile --out "$OUT/criteo" --resident --batches 8192 --launches 2 \
    --models criteo-kaggle,criteo-terabyte,wide-2x,wide-4x --shapes 8 \
    --budget-minutes "${CRITEO_MINUTES:-3.5}" 2>&1 | stamp > "$OUT/criteo.log"
  tail -2 "$OUT/criteo.log"
  ;;
thin)
  plans=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 132,198,264,396,528,1056 --out /tmp/thin-plans) || exit 1
  for kind in launched resident; do
    flag=$([ $kind = resident ] && echo --resident)
    python -m corun.cli profile --out "$OUT/thin" --models heavy-lean --train-pipeline \
      heavy-small --pipelines heavy-small --batches 16384,24576 --shapes 0 --plans "$plans" \
      --reps 11 $flag --budget-minutes 3 2>&1 | stamp > "$OUT/thin-$kind.log"
    tail -2 "$OUT/thin-$kind.log"
  done
  ;;
leads)
  plans=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 132,198,264,396,528,1056 --out /tmp/thin-plans) || exit 1
  for lead in 0.1 0.25 0.5; do
    python -m corun.cli profile --out "$OUT/leads" --models heavy-lean --train-pipeline \
      heavy-small --pipelines heavy-small --batches "${BATCHES:-16384,24576}" --shapes 0 \
      --plans "$plans" --reps 11 --resident --lead-ms $lead --budget-minutes 2.5 2>&1 \
      | stamp > "$OUT/leads-$lead.log"
    tail -2 "$OUT/leads-$lead.log"
  done
  ;;
graphed)
  plans=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 132,198,264,396,528,1056 --out /tmp/thin-plans) || exit 1
  common=(--out "$OUT/graphed" --models heavy-lean --train-pipeline heavy-small
          --pipelines heavy-small --batches "${BATCHES:-16384}" --shapes 0 --plans "$plans"
          --reps 11 --cuda-graphs --budget-minutes 1.5)
  python -m corun.cli profile "${common[@]}" 2>&1 | stamp > "$OUT/graphed-launched.log"
  tail -2 "$OUT/graphed-launched.log"
  for lead in 0.01 0.25; do
    python -m corun.cli profile "${common[@]}" --resident --lead-ms $lead 2>&1 \
      | stamp > "$OUT/graphed-resident-$lead.log"
    tail -2 "$OUT/graphed-resident-$lead.log"
  done
  ;;
steps)
  plans=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 132,198,264,396,528,1056 --out /tmp/thin-plans) || exit 1
  python -m corun.cli profile --out "$OUT/steps" --models heavy-lean --train-pipeline \
    heavy-small --pipelines heavy-small --batches "${BATCHES:-16384,24576}" --shapes 0 \
    --plans "$plans" --reps 11 --cuda-graphs --budget-minutes 3 2>&1 | stamp > "$OUT/steps.log"
  tail -2 "$OUT/steps.log"
  ;;
*)
  echo "PART must be profile, thin, leads, graphed or steps" >&2
  exit 2
  ;;
esac
