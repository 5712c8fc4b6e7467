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
#     PLAN_FILE runs another folder's choice the same way, its baselines on the plan's
#     model, pipeline, batch and step (--cuda-graphs where the plan is graphed; BATCH and
#     STEP_FLAGS override the last two), e.g. run 20's third command: graphed b16384,
#     PLAN_FILE=bench/plans/rehash/heavy-lean-b16384-graphs/plan.json WAYS="graphs own";
#     WAYS may hold "own" (--assembly-stream own). NAME puts the records in sm-cap-NAME/
#     (sm-cap-NAME-eager.tar), for several plans in one command (runs 22-23: the
#     choices of rehash/heavy-lean-b16384, heavy-small-b16384 and heavy-lean-b32768).
#   PART=tune: `corun tune` of FOLDER under bench/plans (default rehash/heavy-lean-b32768;
#     runs 24-25: capped/*, the plans `corun plan` capped, bench/plans/capped/make.sh) with the
#     chosen plan's cap variants (tune_cmd.cap_variants) beside ideal, gpu-sequential and
#     the choice, in ROUNDS rounds within BUDGET_S (run 21 ran it without gpu-sequential,
#     one round, as a plain command: bench/results/sm_cap_h200.md). For a model with the
#     fused update tune also runs its grid variants (tune_cmd.grid_variants, since session
#     59): ten strategies a round for a capped heavy-lean folder.
# With OUT set by the device tool:
#   PART=eager [WAYS="graphs calls"] [CAPS="64 96 112"] [REVERSE=1 SUFFIX=-r2] \
#     [PLAN_FILE=... [BATCH=...] [STEP_FLAGS=...]] [NAME=...] bash bench/sm_cap_session.sh
#   PART=tune [FOLDER=rehash/heavy-lean-b32768] [ROUNDS=2] [BUDGET_S=400] [NAME=...] \
#     bash bench/sm_cap_session.sh
# returns $OUT/sm-cap[-NAME]-$PART.tar (raw records gzipped, logs).
set -u
part=${PART:-eager}
SUFFIX=${SUFFIX:--r1}
base="sm-cap${NAME:+-$NAME}"
root="$OUT/$base"
rm -rf "$root" && mkdir -p "$root"
rc=0
source bench/session_steps.sh
ex() {  # ex NAME ARGS...: one corun execute (bench/session_steps.sh execute_one)
  execute_one "$root/$1" "${@:2}" || rc=$?
}
e=${PLAN_FILE:-bench/plans/rehash/heavy-lean-b32768/plan.json}
field() {  # field KEY: the plan file's value of KEY
  python -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$e" "$1"
}
model=$(field model) pipeline=$(field pipeline)
batch=${BATCH:-$(field batch_per_gpu)}
graphed=""
[ "$(field cuda_graphs)" = True ] && graphed=--cuda-graphs
step=${STEP_FLAGS:-$graphed}  # the baselines' step, as the plan's

case "$part" in
eager)
  baselines() {
    for s in ideal gpu-sequential; do
      ex "$s$1" --strategy $s --model "$model" --pipeline "$pipeline" --batch "$batch" $step
    done
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
  tune_folder "${FOLDER:-rehash/heavy-lean-b32768}" "$root/tune" ideal,gpu-sequential,corun \
    "${ROUNDS:-2}" "${BUDGET_S:-400}" 16 --no-launch-steps --no-lead-variant \
    --no-stream-variant || rc=$?
  ;;
*) echo "PART = $part: one of eager, tune" >&2; exit 2 ;;
esac
tar -C "$OUT" -cf "$OUT/$base-$part.tar" "$base" && rm -rf "$root"
exit $rc
