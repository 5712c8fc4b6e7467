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
#     command cannot hold two (about 80 s a run); SUFFIX names its records (default -r1,
#     the round, as bench/gap_recovery.py reads a folder's records).
#     PLAN_FILE, BATCH and STEP_FLAGS run another folder's choice the same way (run 20's
#     third command: graphed b16384, PLAN_FILE=bench/plans/rehash/heavy-lean-b16384-graphs/
#     plan.json BATCH=16384 STEP_FLAGS=--cuda-graphs WAYS="graphs own"); WAYS may hold
#     "own" (--assembly-stream own).
#   PART=tune: `corun tune` of FOLDER (default heavy-lean-b32768) with the chosen plan's
#     cap variant (tune_cmd.cap_variant) beside ideal, gpu-sequential and the choice, in
#     ROUNDS rounds within BUDGET_S (run 21 ran it without gpu-sequential, one round, as
#     a plain command: bench/results/sm_cap_h200.md).
# With OUT set by the device tool:
#   PART=eager [WAYS="graphs calls"] [CAPS="64 96 112"] [REVERSE=1 SUFFIX=-r2] \
#     [PLAN_FILE=... BATCH=... STEP_FLAGS=...] bash bench/sm_cap_session.sh
#   PART=tune [FOLDER=heavy-lean-b32768] [ROUNDS=2] [BUDGET_S=400] bash bench/sm_cap_session.sh
# returns $OUT/sm-cap-$PART.tar (raw records gzipped, logs).
set -u
part=${PART:-eager}
SUFFIX=${SUFFIX:--r1}
root="$OUT/sm-cap"
rm -rf "$root" && mkdir -p "$root"
rc=0
source bench/session_steps.sh
ex() {  # ex NAME ARGS...: one corun execute (bench/session_steps.sh execute_one)
  execute_one "$root/$1" "${@:2}" || rc=$?
}
e=${PLAN_FILE:-bench/plans/rehash/heavy-lean-b32768/plan.json}
batch=${BATCH:-32768}
step=${STEP_FLAGS:-}  # --cuda-graphs for a graphed folder's baselines

case "$part" in
eager)
  baselines() {
    ex "ideal$1" --strategy ideal --model heavy-lean --pipeline heavy-rehash --batch $batch \
      $step
    ex "gpu-sequential$1" --strategy gpu-sequential --model heavy-lean \
      --pipeline heavy-rehash --batch $batch $step
  }
  ways="${WAYS:-graphs calls} ${CAPS:-64 96 112}"
  [ "${REVERSE:-0}" = 1 ] && ways=$(echo $ways | tr ' ' '\n' | tac | tr '\n' ' ')
  [ "${REVERSE:-0}" = 1 ] || baselines "$SUFFIX"
  for how in $ways; do
    case $how in
    graphs) ex "corun$SUFFIX" "$e" ;;
    calls) ex "corun+calls$SUFFIX" "$e" --no-batch-graphs ;;
    own) ex "corun+own$SUFFIX" "$e" --assembly-stream own ;;
    *) ex "corun+cap$how$SUFFIX" "$e" --preprocess-sm-cap "$how" ;;
    esac
  done
  [ "${REVERSE:-0}" = 1 ] && baselines "$SUFFIX"
  gzip -9n "$root"/*.json 2>/dev/null
  ;;
tune)
  tune_folder "${FOLDER:-heavy-lean-b32768}" "$root/tune" ideal,gpu-sequential,corun \
    "${ROUNDS:-2}" "${BUDGET_S:-400}" 16 --no-launch-steps --no-lead-variant \
    --no-stream-variant || rc=$?
  ;;
*) echo "PART = $part: one of eager, tune" >&2; exit 2 ;;
esac
tar -C "$OUT" -cf "$OUT/sm-cap-$part.tar" sm-cap && rm -rf "$root"
exit $rc
