#!/usr/bin/env bash
# One lent H200: is a training stage held by the heavy-rehash kernel released with it in
# most steps or a few, and does the co-run profile see what the executed step does?
# PART=race (default):
# 1. bench/race_probe.py: eager heavy-lean b32768 beside heavy-rehash's whole kernel at
#    BLOCKS, each released at top_mlp_bwd, interaction_bwd and bottom_mlp_bwd, REPS steps
#    a cell, spin (as the profile), paced (no spin) and resident.
# 2. `corun profile` of the pairs the lookup rows hold (costmodel/data/h200/lookup/, 3
#    steps a pair) at PROFILE_REPS steps a pair and at the block counts the planner and
#    `corun tune` launch (PROFILE_BLOCKS), launched and resident.
# PART=small: step 2 for heavy-lean b32768 training on heavy-small beside heavy-small's
# whole kernel (lookup rows of that pipeline: its stages were extrapolated from b16384).
# PART=graphed: step 2 with the step replayed as CUDA graphs (--cuda-graphs), launched
# only (the release steps the simulator looks graphed plans up in: step_stage_ms), at
# b32768 and b16384 (BATCHES) and the block counts of graphed plans too (GRAPHED_BLOCKS).
# With OUT set by the device tool:
#   [PART=race|small|graphed] [BLOCKS=165,198,231,264,297,396] [REPS=21] [PROFILE_REPS=15] \
#     bash bench/race_session.sh
# returns $OUT/race-$PART.tar (race.json, the profile CSVs and logs).
set -u
part=${PART:-race}
kinds="launched resident"
flags=()
batches=32768
blocks=${PROFILE_BLOCKS:-99,132,148,165,198,231,264,297,396,528,1056}
case "$part" in
  race) pipeline=heavy-rehash ;;
  small) pipeline=heavy-small ;;
  graphed) pipeline=heavy-rehash kinds=launched flags=(--cuda-graphs)
           batches=${BATCHES:-32768,16384}
           blocks=${GRAPHED_BLOCKS:-66,99,132,165,198,231,264,297,396,528,792,1056,1584} ;;
  *) echo "PART = $part: race, small or graphed" >&2; exit 2 ;;
esac
out="$OUT/race"
rm -rf "$out" && mkdir -p "$out"
rc=0
if [ "$part" = race ]; then
  python bench/race_probe.py --out "$out" --blocks "${BLOCKS:-165,198,231,264,297,396}" \
    --reps "${REPS:-21}" > "$out/race.log" 2>&1
  rc=$?
  tail -8 "$out/race.log"
fi
source bench/profile_pairs.sh
profile_pairs "$out" "$pipeline" "$batches" "$blocks" "${PROFILE_REPS:-15}" \
  "${PROFILE_MIN:-2.5}" "$kinds" ${flags[@]+"${flags[@]}"}
tar -C "$OUT" -cf "$OUT/race-$part.tar" race && rm -rf "$out"
exit $rc
