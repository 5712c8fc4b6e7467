#!/usr/bin/env bash
# The embedding update's room in time for the batch's assembly as well as for a small
# fused kernel (bench/stage_offset_probe.py, with the assembly since 2026-12-02): graphed
# heavy-lean beside heavy-small, then graphed heavy-hot beside heavy-short, at offsets
# spread over each model's update. Fitted into rooms by `python -m costmodel.stage_room`.
# Run from the repository root with $OUT set; REPS=N times each point over N steps (the
# probe's default 11); BATCH=8192 probes that batch (default 16384: the offsets of
# bench/stage_offset_session.sh; at 8192 the updates take about half as long, 1.10 and
# 0.53 ms graphed, so the offsets are about halved, finer near heavy-hot's start, where
# the assembly races the update: bench/results/stage_room_h200.md).
set -uo pipefail
batch=${BATCH:-16384}
case "$batch" in
16384) lean=0,0.5,1,1.5,1.8,2.0,2.2; hot=0,0.25,0.5,0.75,0.9,1.0 ;;
8192) lean=0,0.25,0.5,0.75,0.9,1.0,1.1; hot=0,0.025,0.05,0.1,0.15,0.25,0.35,0.45,0.5 ;;
*) echo "BATCH must be 16384 or 8192, not $batch" >&2; exit 2 ;;
esac
python bench/stage_offset_probe.py --out "$OUT/room_heavy_lean_b$batch.json" --batch "$batch" \
  --model heavy-lean --pipeline heavy-small --offsets "$lean" ${REPS:+--reps $REPS}
python bench/stage_offset_probe.py --out "$OUT/room_heavy_hot_b$batch.json" --batch "$batch" \
  --model heavy-hot --pipeline heavy-short --offsets "$hot" ${REPS:+--reps $REPS}
