#!/usr/bin/env bash
# The forward's GEMM beside heavy-lean's chosen kernel (eager b16384, released at
# bottom_mlp_fwd) launched with 40-264 blocks, under the profiler (bench/hold_blocks.py).
# With OUT set by the device tool:
#   [BLOCKS=132,40,66,99,198,264] bash bench/hold_blocks_session.sh
# Returns $OUT/hold_blocks.tar: the plan variants, blocks.json, t/ (traces, timeline.md, hold.md).
set -u
blocks=${BLOCKS:-132,40,66,99,198,264}
n=$(tr , '\n' <<<"$blocks" | wc -l)
strategies=ideal,corun$(seq -s '' -f ',corun-%g' 2 "$n")
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
python bench/hold_blocks.py make bench/plans/heavy-lean-b16384 --blocks "$blocks" --out "$OUT/hb"
python bench/kernel_timeline.py "$OUT/hb" --strategies "$strategies" --iterations 60 --warmup 20 \
  --out "$OUT/hb/t" 2>&1 | grep -v "^|"
python bench/hold_blocks.py report "$OUT/hb/t" --strategies "$strategies"
tar -C "$OUT" -cf "$OUT/hold_blocks.tar" hb && rm -rf "$OUT/hb"
