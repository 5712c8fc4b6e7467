#!/usr/bin/env bash
# Does a preprocessing kernel of many short blocks hide better beside training than one
# full wave of long-lived blocks (sim.strategy.default_launch: 132 SMs x 8 blocks of 256)?
# A full wave holds every SM's thread slots for the kernel's whole run, so the training
# stream's next kernels, high priority or not, wait for its blocks to end; short blocks
# end often and let them in. One device call: the heavy matrix with every kernel launched
# with N blocks ("+b<N>", bench/execute_gpu.py). Usage, with OUT set by the device tool:
#   bash bench/grid_probe.sh
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
run() {  # batch, strategies, budget
  python bench/execute_gpu.py --matrix heavy --batches "$1" --iterations 100 --warmup 10 \
    --strategies "$2" --budget-s "$3" --out "$OUT/b$1" 2>&1 | stamp > "$OUT/execute_heavy_b$1.log"
  grep -E "===|ms, |Error" "$OUT/execute_heavy_b$1.log"
}
# (run 1, bench/results/raw/execute_heavy_grid_b8192_run1.json, also named
# at:emb_bwd+b67584 and at:interaction_bwd+b16896: not labels of --matrix heavy, they
# did not run, and execute_gpu.py now refuses such names up front)
run 8192 ideal,gpu-sequential,gpu-overlap,gpu-overlap+b4224,gpu-overlap+b16896,\
gpu-overlap+b67584,gpu-sequential+b16896,gpu-sequential+b67584,corun,corun+b16896 330
run 16384 ideal,gpu-sequential,gpu-overlap,gpu-overlap+b16896,gpu-overlap+b67584,\
gpu-sequential+b67584 150
tar -C "$OUT" -cf "$OUT/grid.tar" b8192 b16384 execute_heavy_b8192.log \
  execute_heavy_b16384.log && rm -rf "$OUT/b8192" "$OUT/b16384"
