#!/usr/bin/env bash
# Whether coalesced preprocessing hides better beside the heavy model: the heavy case's
# baselines and corun's plan, each as committed (a thread per row) and "+warp" (a warp
# per row for the 100-id sinks, bench/execute_gpu.py), in one process a round; round 2
# runs batch 8192 again, the variants in the reverse order. nvidia-smi samples the clocks and power
# every 100 ms meanwhile (smi.csv), and each log line carries the time, to tell whether
# the co-run's slowdown is the clock's. Usage, with OUT set by the device tool:
#   bash bench/warp_probe.sh
set -u
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,temperature.gpu \
  --format=csv -lms 100 > "$OUT/smi.csv" &
SMI=$!
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
S="ideal,gpu-sequential,gpu-overlap,corun,gpu-sequential+warp,gpu-overlap+warp,corun+warp"
R="corun+warp,gpu-overlap+warp,gpu-sequential+warp,corun,gpu-overlap,gpu-sequential,ideal"
python bench/execute_gpu.py --matrix heavy --batches 8192,16384 --iterations 100 --warmup 10 \
  --strategies "$S" --budget-s 300 --out "$OUT/round1" 2>&1 | stamp > "$OUT/round1.log"
python bench/execute_gpu.py --matrix heavy --batches 8192 --iterations 100 --warmup 10 \
  --strategies "$R" --budget-s 150 --out "$OUT/round2" 2>&1 | stamp > "$OUT/round2.log"
kill $SMI
grep -E "===|ms, |Error" "$OUT"/round*.log
