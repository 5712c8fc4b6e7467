#!/usr/bin/env bash
# The embedding update's room in time for the batch's assembly as well as for a small
# fused kernel (bench/stage_offset_probe.py, with the assembly since 2026-12-02): graphed
# heavy-lean b16384 beside heavy-small, then graphed heavy-hot b16384 beside
# heavy-short, at the offsets of bench/stage_offset_session.sh. Fitted into rooms by
# `python -m costmodel.stage_room`. Run from the repository root with $OUT set; REPS=N
# times each point over N steps (the probe's default 11).
set -uo pipefail
python bench/stage_offset_probe.py --out "$OUT/room_heavy_lean.json" \
  --model heavy-lean --pipeline heavy-small --offsets 0,0.5,1,1.5,1.8,2.0,2.2 ${REPS:+--reps $REPS}
python bench/stage_offset_probe.py --out "$OUT/room_heavy_hot.json" \
  --model heavy-hot --pipeline heavy-short --offsets 0,0.25,0.5,0.75,0.9,1.0 ${REPS:+--reps $REPS}
