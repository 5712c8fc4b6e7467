#!/usr/bin/env bash
# Room inside the embedding update by how far into it a kernel starts
# (bench/stage_offset_probe.py): graphed heavy-lean b16384 (the plain fused update,
# 2.2-2.3 ms) beside heavy-small, then graphed heavy-hot b16384 (the hot-row update,
# 1.05 ms) beside heavy-short. Run from the repository root with $OUT set.
set -uo pipefail
python bench/stage_offset_probe.py --out "$OUT/offset_heavy_lean.json" \
  --model heavy-lean --pipeline heavy-small --offsets 0,0.5,1,1.5,1.8,2.0,2.2
python bench/stage_offset_probe.py --out "$OUT/offset_heavy_hot.json" \
  --model heavy-hot --pipeline heavy-short --offsets 0,0.25,0.5,0.75,0.9,1.0
