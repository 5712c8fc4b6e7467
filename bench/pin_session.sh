#!/usr/bin/env bash
# The launching host thread kept on one core for the timed loop (RunSettings.pin_host,
# "+pin") against the scheduler's choice, strategy by strategy in the same rounds of one
# process: kaggle and terabyte b4096 eager (host-paced; corun's plan there is all-CPU,
# 16 worker processes), heavy b8192. With OUT set by the device tool:
#   bash bench/pin_session.sh
# Returns $OUT/pin_plans4096.tar and $OUT/pin_heavy8192.tar; render with
# python bench/render_repeats.py.
set -u
ONLY=kaggle,terabyte bash bench/heavy_rounds.sh pin_plans4096 plans_pin plans 4 \
  ideal,ideal+pin,gpu-sequential,gpu-sequential+pin,rap,rap+pin,corun,corun+pin 4096:230
bash bench/heavy_rounds.sh pin_heavy8192 heavy_pin heavy 3 \
  ideal,ideal+pin,gpu-sequential,gpu-sequential+pin,gpu-overlap,gpu-overlap+pin 8192:150
