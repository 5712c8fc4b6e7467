#!/usr/bin/env bash
# The trainer's flat interaction on one H200 (2026-12-01): the probe of both ways at
# every interaction shape and batch the profile holds (its record becomes
# costmodel/data/h200/interaction-saving.csv), the GPU tests of the trainer, and the new
# trainer's ideal step where the plans and the heavy case run, eager and as CUDA graphs
# (the graphed stage times replace costmodel/data/h200/graphed-stages.csv's). Run from
# the repository root with $OUT set; each part writes its own file under $OUT.
set -uo pipefail
python bench/interaction_probe.py --cases profiled --out "$OUT"
python -m pytest -q -p no:cacheprovider tests/test_trainer.py tests/test_graphed.py 2>&1 | tail -3
python bench/execute_gpu.py --matrix plans --strategies ideal --budget-s 150 --out "$OUT"
python bench/execute_gpu.py --matrix heavy --strategies ideal --budget-s 100 --out "$OUT"
python bench/execute_gpu.py --matrix graphs-stages --budget-s 150 --out "$OUT"
