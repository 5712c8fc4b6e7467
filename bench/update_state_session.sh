#!/usr/bin/env bash
# Does a co-running kernel speed the fused embedding update up? heavy-fused's emb_bwd
# took 2.83-3.05 ms in ideal from process to process, while the whole pipeline released at
# bottom_mlp_bwd, running into emb_bwd, left it at 2.85-2.87 in the same processes
# (bench/results/tune_h200.md, run 3). The contention probe times the plain step and the
# step beside arithmetic (alu, alu-thin: no memory traffic) and memory streams (stream,
# stream1) released at every stage, each stage timed: N processes at b16384. With OUT set
# by the device tool:
#   [N=2] bash bench/update_state_session.sh
# returns $OUT/update_state.tar.
set -u
mkdir -p "$OUT/update_state"
for i in $(seq 1 "${N:-2}"); do
  python bench/contention_probe.py --batches 16384 --reps 12 --out "$OUT/update_state/p$i" \
    > "$OUT/update_state/p$i.log" 2>&1
  tail -6 "$OUT/update_state/p$i.log"
done
tar -C "$OUT" -cf "$OUT/update_state.tar" update_state && rm -rf "$OUT/update_state"
