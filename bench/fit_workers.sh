#!/usr/bin/env bash
# What host workers cost the thread that launches the step (costmodel/host.py,
# WORKERS_MS and DISTRIBUTED_WORKERS_MS): every one-GPU run with a plan on the host CPU
# before plans run 21 (held out), and 2-GPU runs 6 and 7 (run 8 held out).
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/raw
python3 bench/fit_host.py --workers \
  $r/execute_capped_refined_b16384.json $r/execute_capped_thin_b16384.json \
  $r/execute_default_b4096_run1.json $r/execute_default_b4096_run2.json \
  $r/execute_plans_heavy_run3.json $r/execute_plans_pin_b4096.json \
  $r/execute_plans_run3.json $r/execute_plans_run5.json $r/execute_plans_run6.json \
  $r/execute_plans_run8.json $r/execute_plans_run9.json $r/execute_plans_run10.json \
  $r/execute_plans_run11.json $r/execute_plans_run12.json $r/execute_plans_run13.json \
  $r/execute_plans_run14.json $r/execute_plans_run15.json $r/execute_plans_run16.json \
  $r/execute_plans_run17.json $r/execute_plans_run18.json $r/execute_plans_run19.json \
  $r/execute_plans_run20.json $r/execute_plans_workers_start_run1.json \
  $r/execute_tiebreak_b8192.json \
  $r/execute_multigpu_run6.json $r/execute_multigpu_run7.json \
  -o bench/results/host_workers.json
