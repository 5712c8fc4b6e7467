#!/usr/bin/env bash
# Issue 6's heavy case with the SMs split between the streams (RunSettings.preprocess_sms,
# backend/sm_split.py): first its GPU tests (a Numba kernel and a PyTorch matmul on the
# two green-context streams, results checked), then heavy-fused at 8192 and 16384 with
# ideal and gpu-overlap on the whole GPU and with the preprocessing stream on N SMs
# ("+sm<N>"), gpu-sequential beside them. Run 1 (commit a1e306d, where the setting was
# a Plan field; bench/results/raw/execute_heavy_smsplit_run1.json) ran the matrix alone.
# Usage, with OUT set by the device tool:
#   bash bench/sm_split_probe.sh
set -u
NUMBA_ENABLE_CUDASIM=0 python -m pytest -q tests/test_sm_split.py 2>&1 | tail -3
python bench/execute_gpu.py --matrix heavy --batches "${BATCHES:-8192,16384}" \
  --strategies "${STRATEGIES:-ideal,ideal+sm24,ideal+sm32,gpu-sequential,gpu-overlap,gpu-overlap+sm16,gpu-overlap+sm24,gpu-overlap+sm32,gpu-overlap+sm48}" \
  --budget-s "${EXEC_S:-420}" --out "$OUT" 2>&1 | tail -80
