#!/usr/bin/env bash
# `corun tune` on one lent H200: the planner's choice and its runners-up (plan folders
# under bench/plans/tune/, made by `corun plan --runners-up K --out ...`; their .txt is
# the plan's printout) beside ideal and the baselines, in rounds of one process each.
# PART=heavy (the default): heavy-fused at b16384 and b8192 (runners-up 4, planned with
# the profile of 2026-12-01 that built the profiler's trainer first). PART=first: the
# session of 2026-12-01 (runs 1-2 of bench/results/tune_h200.md, the folders at commit
# 12c733d, `git checkout 12c733d -- bench/plans/tune` first: heavy-fused b16384 and
# criteo-kaggle b4096, runners-up 3), then (SIDE=1) the
# 1056-block kernel at bottom_mlp_bwd with shorter-lived blocks. PART=default: the
# README's default workload, criteo-kaggle b4096 (runners-up 4), in ROUNDS rounds (5
# there: its host-paced step swings between rounds). PART=repeat: heavy-fused b16384's
# chosen plan beside ideal, gpu-sequential and gpu-overlap in N processes (2), one after
# the other, for how its recovery of the gap spreads between processes. PART=ranking: the
# committed one-GPU plans whose single-case run (bench/results/plans_h200_refit.md) did not
# measure the planner's choice fastest, beside ideal, gpu-sequential and RAP's plan in
# rounds: terabyte b4096 (5 rounds, host-paced) and wide-4x b8192. PART=lean8192: graphed
# heavy-lean b8192 (bench/plans/graphs/heavy-lean-b8192, runners-up 4), every plan of the
# folder with the choice's launch steps and other batch lead, where gpu-sequential measured
# 19.6-20.2% below ideal and no plan had been tuned. PART=lean-steps: the graphed
# heavy-lean b8192 and b12288 folders, each with its choice's launch steps and lead
# (session 47 ran it at e956088d, the folders planned with those batches' release steps
# installed: bench/results/small_batch_steps_h200.md). PART=heavy-head: the two graphed heavy
# folders the README's targets name, graphed heavy-lean b16384 and heavy-short (beside
# heavy-hot) b16384, as committed, at the code of the day. PART=short: graphed heavy-short
# beside heavy-hot at b16384 and b8192, both folders re-planned after the stage's delay was
# handed to the kernel in time (session 49, sim.scenario._effect; b16384 has three
# runners-up, b8192 four). PART=line: the folders re-planned after a kernel's time alone at
# untimed rows was read off its line (session 50, CoRunModel.kernel_alone_ms): graphed
# heavy-lean b12288 (a new choice, four runners-up) and heavy-short b16384 (the same
# choice, two runners-up). With OUT set by the device tool:
#   [PART=heavy|first|default|repeat|ranking|lean8192|lean-steps|heavy-head|short|line] [ROUNDS=3] [SIDE=1] [N=2] bash bench/tune_session.sh
# returns $OUT/tune.tar (the device tool returns few files).
set -u
rounds=${ROUNDS:-3}
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
tune() {  # FOLDER (under bench/plans/) BUDGET_S STRATEGIES [OUTPUT NAME, default the folder's]
  local out=${4:-$(basename "$1")}
  python -m corun.cli tune "bench/plans/$1" --strategies "$3" --rounds "$rounds" --iterations 300 \
    --warmup 20 --budget-s "$2" -o "$OUT/tune/$out" 2>&1 | stamp > "$OUT/tune/$out.log"
  grep -vE "^[0-9:.]+ +(iteration|round)|compiling|preparing|batches and" "$OUT/tune/$out.log" | cut -c14-
}
case "${PART:-heavy}" in
  heavy|first|default|repeat|ranking|lean8192|lean-steps|heavy-head|short|line) ;;
  *) echo "PART = ${PART}: one of heavy, first, default, repeat, ranking, lean8192, lean-steps, heavy-head, short, line" >&2
     exit 2 ;;
esac
folder=ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5  # ideal and gpu-sequential beside a folder's plan and its four runners-up
mkdir -p "$OUT/tune"
if [ "${PART:-heavy}" = default ]; then
  rounds=${ROUNDS:-5}
  tune tune/criteo-kaggle-b4096 220 "$folder"
elif [ "${PART:-heavy}" = ranking ]; then
  rounds=${ROUNDS:-5}
  tune terabyte-b4096 150 ideal,gpu-sequential,rap,corun
  rounds=3
  tune wide-4x-b8192 200 ideal,gpu-sequential,rap,corun
elif [ "${PART:-heavy}" = lean8192 ]; then
  tune graphs/heavy-lean-b8192 ${BUDGET_S:-420} "$folder"
elif [ "${PART:-heavy}" = lean-steps ]; then
  tune graphs/heavy-lean-b8192 ${BUDGET_S:-200} "$folder"
  tune graphs/heavy-lean-b12288 ${BUDGET_S:-200} "$folder"
elif [ "${PART:-heavy}" = heavy-head ]; then
  tune graphs/heavy-lean-b16384 ${BUDGET_S:-200} "$folder"
  tune graphs/heavy-short-b16384 ${BUDGET_S:-200} "$folder"
elif [ "${PART:-heavy}" = short ]; then
  tune graphs/heavy-short-b16384 ${BUDGET_S:-190} "${folder%,corun-5}"
  tune graphs/heavy-short-b8192 ${BUDGET_S:-190} "$folder"
elif [ "${PART:-heavy}" = line ]; then
  tune graphs/heavy-lean-b12288 ${BUDGET_S:-200} "$folder"
  tune graphs/heavy-short-b16384 ${BUDGET_S:-200} ideal,gpu-sequential,corun,corun-2,corun-3
elif [ "${PART:-heavy}" = repeat ]; then
  for p in $(seq 1 "${N:-2}"); do
    tune tune/heavy-fused-b16384 150 ideal,gpu-sequential,gpu-overlap,corun "heavy-fused-b16384-p$p"
  done
elif [ "${PART:-heavy}" = heavy ]; then
  tune tune/heavy-fused-b16384 240 ideal,gpu-sequential,gpu-overlap,corun,corun-2,corun-3,corun-4,corun-5
  tune tune/heavy-fused-b8192 170 ideal,gpu-sequential,gpu-overlap,corun,corun-2,corun-3,corun-4,corun-5
else
  tune tune/heavy-fused-b16384 200 ideal,gpu-sequential,gpu-overlap,corun,corun-2,corun-3,corun-4
  tune tune/criteo-kaggle-b4096 120 ideal,gpu-sequential,corun,corun-2,corun-3,corun-4
  if [ "${SIDE:-1}" = 1 ]; then
    ONLY=heavy bash bench/heavy_rounds.sh side side heavy-stages "$rounds" \
      ideal,gpu-sequential,corun,at:bottom_mlp_bwd,at:bottom_mlp_bwd+b4224,at:bottom_mlp_bwd+b16896 \
      16384:150
    mv "$OUT/side.tar" "$OUT/tune/"
  fi
fi
tar -C "$OUT" -cf "$OUT/tune.tar" tune && rm -rf "$OUT/tune"
