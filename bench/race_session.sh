#!/usr/bin/env bash
# One lent H200: is a training stage held by the heavy-rehash kernel released with it in
# most steps or a few, and does the co-run profile see what the executed step does?
# 1. bench/race_probe.py: eager heavy-lean b32768 beside heavy-rehash's whole kernel at
#    BLOCKS, each released at top_mlp_bwd, interaction_bwd and bottom_mlp_bwd, REPS steps
#    a cell, spin (as the profile), paced (no spin) and resident.
# 2. `corun profile` of the same pairs the lookup rows hold (costmodel/data/h200/lookup/,
#    3 steps a pair) at PROFILE_REPS steps a pair and at the block counts the planner and
#    `corun tune` launch (PROFILE_BLOCKS), launched and resident.
# With OUT set by the device tool:
#   [BLOCKS=165,198,231,264,297,396] [REPS=21] [PROFILE_REPS=15] bash bench/race_session.sh
# returns $OUT/race.tar (race.json, the profile CSVs and logs).
set -u
out="$OUT/race"
rm -rf "$out" && mkdir -p "$out"
python bench/race_probe.py --out "$out" --blocks "${BLOCKS:-165,198,231,264,297,396}" \
  --reps "${REPS:-21}" > "$out/race.log" 2>&1
rc=$?
tail -8 "$out/race.log"
plans=$(python bench/launch_plans.py --pipeline heavy-rehash --model heavy-lean \
  --blocks "${PROFILE_BLOCKS:-99,132,148,165,198,231,264,297,396,528,1056}" \
  --out /tmp/launch-plans | tr ',' '\n' | grep warp | paste -sd,)
for kind in launched resident; do
  flag=(); [ $kind = resident ] && flag=(--resident)
  python -m corun.cli profile --out "$out/profile" --models heavy-lean \
    --train-pipeline heavy-rehash --pipelines heavy-rehash --batches 32768 \
    --reps "${PROFILE_REPS:-15}" --shapes 0 --plans "$plans" "${flag[@]}" \
    --budget-minutes "${PROFILE_MIN:-2.5}" > "$out/profile-$kind.log" 2>&1
  tail -2 "$out/profile-$kind.log"
done
tar -C "$OUT" -cf "$OUT/race.tar" race && rm -rf "$out"
exit $rc
