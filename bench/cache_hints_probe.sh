#!/usr/bin/env bash
# What evict-first loads and stores (backend/cache_hints.py) are worth on issue 6's heavy
# case: the heavy matrix with the hints off (CORUN_CACHE_HINTS=0, one process) and on
# (the default, another process), each with its own ideal; "+nocheck" shows what the
# per-batch comparison with the reference costs. Usage, with OUT set by the device tool:
#   bash bench/cache_hints_probe.sh
set -u
mkdir -p "$OUT/off" "$OUT/on"
CORUN_CACHE_HINTS=0 python bench/execute_gpu.py --matrix heavy --batches "${OFF_BATCHES:-8192}" \
  --strategies "${OFF_STRATEGIES:-ideal,gpu-sequential,gpu-overlap,corun}" \
  --budget-s "${OFF_S:-150}" --out "$OUT/off" 2>&1 | grep -E "^===|ms,|Error|error" 
python bench/execute_gpu.py --matrix heavy --batches "${ON_BATCHES:-8192,16384}" \
  --strategies "${ON_STRATEGIES:-ideal,gpu-sequential,gpu-overlap,corun,gpu-overlap+nocheck}" \
  --budget-s "${ON_S:-240}" --out "$OUT/on" 2>&1 | grep -E "^===|ms,|Error|error"
