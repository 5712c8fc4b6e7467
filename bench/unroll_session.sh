#!/usr/bin/env bash
# Unrolled values kernels (FusedGroup.unroll, "+u<N>") on the H200: does a kernel that
# computes 2 or 4 list elements a thread side by side hide more of the heavy pipelines
# beside the training step? PART=lean: the kernel alone at five widths
# (bench/unroll_probe.py), then graphed heavy-lean b16384, 2 rounds; PART=short:
# graphed heavy-short b16384, 2 rounds. Run from the repository root with $OUT set.
# Run 1 (PART=lean, session 39): slower alone and beside the step, so PART=short was not
# run; bench/results/unroll_h200.md.
set -uo pipefail
case "${PART:-lean}" in
lean)
  python bench/unroll_probe.py --out "$OUT" --pipelines heavy-small,heavy-short \
    --rows 16384 --blocks 132,198,264,396,1056 --unrolls 1,2,4
  python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
    --strategies ideal,gpu-sequential,gpu-sequential+u2,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b198+ahead2+u2,at:interaction_bwd+b198+ahead2+u4,at:interaction_bwd+b132+ahead2+u2,at:interaction_bwd+b396+ahead2+u2,at:emb_bwd+b264+ahead2+u2 \
    --budget-s "${BUDGET_S:-360}" --out "$OUT" 2>&1 | grep -v "iteration [0-9]" ;;
short)
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384 --repeats 2 \
    --strategies ideal,gpu-sequential,gpu-sequential+u2,corun,corun+u2,corun+u4,at:emb_bwd+b264+ahead2+u2,at:emb_bwd+b132+ahead2+u4,at:interaction_bwd+b198+ahead2+u2 \
    --budget-s "${BUDGET_S:-420}" --out "$OUT" 2>&1 | grep -v "iteration [0-9]" ;;
*) echo "PART=${PART}: lean or short" >&2; exit 2 ;;
esac
