#!/usr/bin/env bash
# The fused values kernel compiled with at most 32 registers a thread ("+r32",
# RunSettings.values_max_registers) beside the graphed heavy steps: uncapped it takes 56,
# so three 256-thread blocks an SM hold 43k of the SM's 64k registers and the 396-block
# kernel at interaction_bwd held that stage in part of the steps (heavy_batches_h200.md);
# capped, three blocks hold 24.6k. Graphed heavy-lean b16384, then heavy-short b16384,
# 2 rounds each. Run from the repository root with $OUT set.
# Run 1 (session 39): a few points either way; bench/results/register_caps_h200.md.
set -uo pipefail
python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
  --strategies "ideal,gpu-sequential,gpu-sequential+r32,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b198+ahead2+r32,at:interaction_bwd+b264+ahead2+r32,at:interaction_bwd+b396+ahead2,at:interaction_bwd+b396+ahead2+r32" \
  --budget-s "${BUDGET_S:-240}" --out "$OUT/lean" 2>&1 | grep -v "iteration [0-9]"
python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384 --repeats 2 \
  --strategies "ideal,gpu-sequential,gpu-sequential+r32,corun,corun+r32,at:emb_bwd+b1056+ahead2+r32,at:emb_bwd+b264+ahead2+r32" \
  --budget-s "${BUDGET_S:-240}" --out "$OUT/short" 2>&1 | grep -v "iteration [0-9]"
