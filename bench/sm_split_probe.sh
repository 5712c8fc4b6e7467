#!/usr/bin/env bash
# Issue 6's heavy case with the SMs split between the streams (Plan.preprocess_sms,
# backend/sm_split.py): first a smoke test (a Numba kernel and a PyTorch matmul on the
# two green-context streams, results checked), then heavy-fused at 8192 and 16384 with
# ideal and gpu-overlap on the whole GPU and with the preprocessing stream on N SMs
# ("+sm<N>"), gpu-sequential beside them. Usage, with OUT set by the device tool:
#   bash bench/sm_split_probe.sh
set -u
mkdir -p "$OUT/logs"
python - <<'PY' 2>&1 | tee "$OUT/logs/smoke.txt"
import numpy as np, torch
from numba import cuda
from backend.sm_split import split_sms
s = split_sms(torch.device("cuda:0"), 16, True)
print("train SMs", s.train_sms, "pre SMs", s.pre_sms)
@cuda.jit
def add1(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1
x = torch.zeros(1 << 20, device="cuda")
with torch.cuda.stream(s.pre):
    add1[1024, 1024, cuda.external_stream(s.pre.cuda_stream)](cuda.as_cuda_array(x))
with torch.cuda.stream(s.train):
    a = torch.randn(4096, 4096, device="cuda"); b = a @ a
torch.cuda.synchronize()
print("numba on pre stream ok:", bool((x == 1).all()), "matmul ok:", bool(torch.isfinite(b).all()))
PY
python bench/execute_gpu.py --matrix heavy --batches "${BATCHES:-8192,16384}" \
  --strategies "${STRATEGIES:-ideal,ideal+sm24,ideal+sm32,gpu-sequential,gpu-overlap,gpu-overlap+sm16,gpu-overlap+sm24,gpu-overlap+sm32,gpu-overlap+sm48}" \
  --budget-s "${EXEC_S:-420}" --out "$OUT" 2>&1 | tail -80
