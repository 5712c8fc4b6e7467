# Sourced by bench/race_session.sh and bench/rehash_session.sh (not run on its own):
# `corun profile` of heavy-lean beside one pipeline's whole kernel, a warp a row, at
# several block counts (bench/launch_plans.py), launched and/or resident.
#   profile_pairs DIR PIPELINE BATCHES BLOCKS REPS MINUTES "KINDS" [corun profile flags...]
# KINDS: "launched", "resident" or both; the rows go to DIR/profile/, each kind's log to
# DIR/profile-KIND.log (its last two lines printed).
profile_pairs() {
  local dir=$1 pipeline=$2 batches=$3 blocks=$4 reps=$5 minutes=$6 kinds=$7
  shift 7
  local plans kind
  plans=$(python bench/launch_plans.py --pipeline "$pipeline" --model heavy-lean \
    --blocks "$blocks" --out /tmp/launch-plans | tr ',' '\n' | grep warp | paste -sd,)
  for kind in $kinds; do
    local flag=("$@")
    [ "$kind" = resident ] && flag+=(--resident)
    python -m corun.cli profile --out "$dir/profile" --models heavy-lean \
      --train-pipeline "$pipeline" --pipelines "$pipeline" --batches "$batches" \
      --reps "$reps" --shapes 0 --plans "$plans" ${flag[@]+"${flag[@]}"} \
      --budget-minutes "$minutes" > "$dir/profile-$kind.log" 2>&1
    tail -2 "$dir/profile-$kind.log"
  done
}
