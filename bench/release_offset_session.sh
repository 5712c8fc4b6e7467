#!/usr/bin/env bash
# The whole pipeline released into the room at the end of the graphed embedding update
# ("+off<ms>": the preprocessing stream spins that long after emb_bwd opens; the update
# leaves new blocks no SM time for its first ~1.4 of 2.34 ms at heavy-lean b16384,
# bench/results/stage_offset_h200.md), beside the baselines and the 198-block kernel at
# interaction_bwd (the best so far), graphed heavy-lean b16384 and b8192 (offsets scaled
# by the update's time), 2 rounds. Run from the repository root with $OUT set.
set -uo pipefail
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
  --strategies "ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,at:emb_bwd+off1.4+b396+ahead2,at:emb_bwd+off1.4+b528+ahead2,at:emb_bwd+off1.4+b1056+ahead2,at:emb_bwd+off1.2+b528+ahead2,at:emb_bwd+off1.6+b528+ahead2" \
  --budget-s "${BUDGET_S:-200}" --out "$OUT/b16384" 2>&1 | grep -v "iteration [0-9]"
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 8192 --repeats 2 \
  --strategies "ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,at:emb_bwd+off0.6+b528+ahead2,at:emb_bwd+off0.7+b1056+ahead2,at:emb_bwd+off0.8+b528+ahead2" \
  --budget-s "${BUDGET_S:-200}" --out "$OUT/b8192" 2>&1 | grep -v "iteration [0-9]"
