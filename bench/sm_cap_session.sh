#!/usr/bin/env bash
# One lent H200, for the preprocessing stream confined to some SMs while training keeps
# every SM (RunSettings.preprocess_sm_cap, `corun execute --preprocess-sm-cap N`).
#   PART=eager (run 20): eager heavy-rehash b32768's choice (bench/plans/rehash/
#     heavy-lean-b32768: 198 blocks at interaction_bwd, two ahead), whose values kernel
#     took every SM in the steps where it became ready between two training kernels
#     (run 19, bench/results/race_trace_h200.md), confined to CAPS SMs; beside ideal,
#     gpu-sequential and the choice on every SM, with its batch graphs (the default) and
#     without (--no-batch-graphs, as a green context needs). REVERSE=1 runs the same
#     in the reverse order (the caps first, ideal last), a second round where one
#     command cannot hold two (about 80 s a run); SUFFIX names its records (-r2).
# With OUT set by the device tool:
#   PART=eager [WAYS="graphs calls"] [CAPS="64 96 112"] [REVERSE=1 SUFFIX=-r2] \
#     bash bench/sm_cap_session.sh
# returns $OUT/sm-cap-$PART.tar (raw records gzipped, logs).
set -u
part=${PART:-eager}
SUFFIX=${SUFFIX:-}
root="$OUT/sm-cap"
rm -rf "$root" && mkdir -p "$root"
rc=0
source bench/session_steps.sh
ex() {  # ex NAME ARGS...: one corun execute (bench/session_steps.sh execute_one)
  execute_one "$root/$1" "${@:2}" || rc=$?
}
e=bench/plans/rehash/heavy-lean-b32768/plan.json

case "$part" in
eager)
  baselines() {
    ex "ideal$1" --strategy ideal --model heavy-lean --pipeline heavy-rehash --batch 32768
    ex "gpu-sequential$1" --strategy gpu-sequential --model heavy-lean \
      --pipeline heavy-rehash --batch 32768
  }
  ways="${WAYS:-graphs calls} ${CAPS:-64 96 112}"
  [ "${REVERSE:-0}" = 1 ] && ways=$(echo $ways | tr ' ' '\n' | tac | tr '\n' ' ')
  [ "${REVERSE:-0}" = 1 ] || baselines ""
  for how in $ways; do
    case $how in
    graphs) ex "corun$SUFFIX" "$e" ;;
    calls) ex "corun+calls$SUFFIX" "$e" --no-batch-graphs ;;
    *) ex "corun+cap$how$SUFFIX" "$e" --preprocess-sm-cap "$how" ;;
    esac
  done
  [ "${REVERSE:-0}" = 1 ] && baselines "$SUFFIX"
  gzip -9n "$root"/*.json 2>/dev/null
  ;;
*) echo "PART = $part: one of eager" >&2; exit 2 ;;
esac
tar -C "$OUT" -cf "$OUT/sm-cap-$part.tar" sm-cap && rm -rf "$root"
exit $rc
