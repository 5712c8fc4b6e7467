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
# part done, as one carried from an earlier stage is (LEADS="a b ...": other leads, ms).
# Writes $OUT/leads/resident.csv.
#   PART=graphed bash bench/resident_session.sh
# the same kernels beside the step replayed as CUDA graphs (--cuda-graphs), launched and
# resident 0.01 and 0.25 ms before the stage, b16384. Writes $OUT/graphed/graphed-*.csv.
#   PART=steps bash bench/resident_session.sh
# the same kernels launched beside the graphed step at b16384 and b24576, every stage of
# the steps that released them recorded (step_stage_ms). Writes $OUT/steps/graphed-profile.csv.
# MODEL=heavy-hot PIPELINE=heavy-short BATCHES=8192,16384 PART=steps: the same for
# heavy-hot beside heavy-short (the other parts are heavy-lean's only); BLOCKS=a,b,...
# other launch widths.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
profile() {  # log name, then corun profile's arguments: its output to $OUT/<name>.log
  local log="$OUT/$1.log"
  shift
  python -m corun.cli profile "$@" 2>&1 | stamp > "$log"
  tail -2 "$log"
}
model=${MODEL:-heavy-lean} pipeline=${PIPELINE:-heavy-small}
launch_plans() {  # the model's whole pipeline at these blocks, both row mappings
  python bench/launch_plans.py --pipeline "$pipeline" --model "$model" --blocks "$1" \
    --out "/tmp/launch-plans-${1//,/-}"
}
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
if [ "$model" != heavy-lean ] && [ "${PART:-profile}" != steps ]; then
  echo "MODEL=$model: only PART=steps takes another model" >&2; exit 2
fi
lean=(--models "$model" --train-pipeline "$pipeline" --pipelines "$pipeline")
case "${PART:-profile}" in
profile)
  plans=$(launch_plans 132,198,264,528,1056,2112) || exit 1
  profile heavy-launches --out "$OUT/heavy" "${lean[@]}" --reps 3 --batches 16384,8192 \
    --resident --shapes 0 --plans "$plans" --budget-minutes 2
  thin=$(launch_plans 198) || exit 1
  profile heavy-thin --out "$OUT/heavy" "${lean[@]}" --reps 3 --batches 16384,8192 \
    --shapes 0 --plans "$thin" --budget-minutes 1
  profile heavy-random --out "$OUT/heavy" "${lean[@]}" --reps 3 --batches 16384,8192 \
    --resident --shapes 5 --launches 2 --mappings thread,warp --budget-minutes 1.5
  profile criteo --out "$OUT/criteo" --resident --batches 8192 --launches 2 \
    --models criteo-kaggle,criteo-terabyte,wide-2x,wide-4x --shapes 8 \
    --budget-minutes "${CRITEO_MINUTES:-3.5}"
  ;;
thin)
  plans=$(launch_plans 132,198,264,396,528,1056) || exit 1
  profile thin-launched --out "$OUT/thin" "${lean[@]}" --batches 16384,24576 --shapes 0 \
    --plans "$plans" --reps 11 --budget-minutes 3
  profile thin-resident --out "$OUT/thin" "${lean[@]}" --batches 16384,24576 --shapes 0 \
    --plans "$plans" --reps 11 --resident --budget-minutes 3
  ;;
leads)
  plans=$(launch_plans 132,198,264,396,528,1056) || exit 1
  for lead in ${LEADS:-0.1 0.25 0.5}; do
    profile "leads-$lead" --out "$OUT/leads" "${lean[@]}" --batches "${BATCHES:-16384,24576}" \
      --shapes 0 --plans "$plans" --reps 11 --resident --lead-ms $lead --budget-minutes 2.5
  done
  ;;
graphed)
  plans=$(launch_plans 132,198,264,396,528,1056) || exit 1
  common=(--out "$OUT/graphed" "${lean[@]}" --batches "${BATCHES:-16384}" --shapes 0
          --plans "$plans" --reps 11 --cuda-graphs --budget-minutes 1.5)
  profile graphed-launched "${common[@]}"
  for lead in 0.01 0.25; do
    profile "graphed-resident-$lead" "${common[@]}" --resident --lead-ms $lead
  done
  ;;
steps)
  plans=$(launch_plans "${BLOCKS:-132,198,264,396,528,1056}") || exit 1
  profile steps --out "$OUT/steps" "${lean[@]}" --batches "${BATCHES:-16384,24576}" \
    --shapes 0 --plans "$plans" --reps 11 --cuda-graphs --budget-minutes 3
  ;;
*)
  echo "PART must be profile, thin, leads, graphed or steps" >&2
  exit 2
  ;;
esac
