#!/usr/bin/env bash
# Each model's eager ideal at batch 2048 and 4096, where the launching host thread paces
# the step, 2 rounds: the host's step by model against criteo-kaggle's (`python
# bench/fit_host.py --step-scales`; bench/results/host_steps_h200.md says why the model
# keeps one step for all). The pipelines' own models first,
# then heavy-fused and heavy-lean on theirs, back to back on the same host. Run from the
# repository root on the H200 with $OUT set.
set -uo pipefail
stamp() { while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done; }
python bench/execute_gpu.py --matrix host-steps --repeats 2 --budget-s 330 \
  --out "$OUT/default" 2>&1 | grep -v "iteration" | stamp
python bench/execute_gpu.py --matrix host-steps --only heavy --model heavy-fused --repeats 2 \
  --budget-s 60 --out "$OUT/heavy_fused" 2>&1 | grep -v "iteration" | stamp
python bench/execute_gpu.py --matrix host-steps --only heavy-small --model heavy-lean \
  --repeats 2 --budget-s 60 --out "$OUT/heavy_lean" 2>&1 | grep -v "iteration" | stamp
