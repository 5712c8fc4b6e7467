#!/usr/bin/env bash
# The GPU's clocks, power and throttle reasons logged every 50 ms (nvidia-smi) while
# heavy-fused b16384 runs ideal, gpu-sequential and corun's plan in rounds, in N
# processes: whether emb_bwd's slower speed in ideal (bench/results/tune_h200.md, run 3;
# bench/update_state_session.sh) comes with other clocks. With OUT set by the device tool:
#   [N=2] [ROUNDS=4] bash bench/clock_log_session.sh
# returns $OUT/clock_log.tar (clocks.csv, reasons.csv, and each process's execute_clock_<i>_b16384.*).
set -u
mkdir -p "$OUT/clock_log"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv -lms 50 > "$OUT/clock_log/clocks.csv" 2>&1 &
logger=$!
nvidia-smi --query-gpu=timestamp,clocks_event_reasons.active --format=csv -lms 50 \
  > "$OUT/clock_log/reasons.csv" 2>&1 &
reasons=$!
for i in $(seq 1 "${N:-2}"); do
  ONLY=heavy bash bench/heavy_rounds.sh "clock_$i" "clock_$i" heavy-stages "${ROUNDS:-4}" \
    ideal,gpu-sequential,corun 16384:100
  mv "$OUT/clock_$i.tar" "$OUT/clock_log/"
done
kill "$logger" "$reasons"
tar -C "$OUT" -cf "$OUT/clock_log.tar" clock_log && rm -rf "$OUT/clock_log"
