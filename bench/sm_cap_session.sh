#!/usr/bin/env bash
# One lent H200, for the preprocessing stream confined to some SMs while training keeps
# every SM (RunSettings.preprocess_sm_cap, `corun execute --preprocess-sm-cap N`).
#   PART=eager (run 20): eager heavy-rehash b32768's choice (bench/plans/rehash/
#     heavy-lean-b32768: 198 blocks at interaction_bwd, two ahead), whose values kernel
#     took every SM in the steps where it became ready between two training kernels
#     (run 19, bench/results/race_trace_h200.md), confined to CAPS SMs; beside ideal,
#     gpu-sequential and the choice on every SM, with its batch graphs (the default) and
#     without (--no-batch-graphs, as a green context needs), in ROUNDS rounds of turned
#     order.
# With OUT set by the device tool:
#   PART=eager [CAPS="64 96 112"] [ROUNDS=1] bash bench/sm_cap_session.sh
# returns $OUT/sm-cap-$PART.tar (raw records gzipped, logs).
set -u
part=${PART:-eager}
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
  ex ideal --strategy ideal --model heavy-lean --pipeline heavy-rehash --batch 32768
  ex gpu-sequential --strategy gpu-sequential --model heavy-lean --pipeline heavy-rehash \
    --batch 32768
  ways="graphs calls ${CAPS:-64 96 112}"
  for r in $(seq 1 "${ROUNDS:-1}"); do
    order=$ways
    [ $((r % 2)) = 0 ] && order=$(echo $ways | tr ' ' '\n' | tac | tr '\n' ' ')
    for how in $order; do
      case $how in
      graphs) ex "corun-r$r" "$e" ;;
      calls) ex "corun+calls-r$r" "$e" --no-batch-graphs ;;
      *) ex "corun+cap$how-r$r" "$e" --preprocess-sm-cap "$how" ;;
      esac
    done
  done
  gzip -9n "$root"/*.json 2>/dev/null
  ;;
*) echo "PART = $part: one of eager" >&2; exit 2 ;;
esac
tar -C "$OUT" -cf "$OUT/sm-cap-$part.tar" sm-cap && rm -rf "$root"
exit $rc
