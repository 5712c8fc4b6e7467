#!/usr/bin/env bash
# The README's main job plans kaggle at batch 4096 (the built-in default) and says its
# next-best schedules are predicted within the simulator's error of the chosen plan
# (all on the host CPU until 2026-12-01, one kernel on the GPU since; corun plan
# --runners-up 2 -> bench/plans/kaggle-b4096/plan-2.json, plan-3.json).
# Measure them beside it, with ideal and gpu-sequential, in rounds (bench/execute_gpu.py
# --repeats). STRATEGIES, ROUNDS and BUDGET_S change what runs ("+w<N>": N host workers
# instead of one per host core). Usage, with OUT set by the device tool:
#   bash bench/default_session.sh
# Run 1 took the defaults; run 2:
#   ROUNDS=2 STRATEGIES=ideal,gpu-sequential,corun,corun+w8,corun+w4 bash bench/default_session.sh
# run 3 (the GPU plan, no runners-up written):
#   ROUNDS=4 STRATEGIES=ideal,gpu-sequential,corun BUDGET_S=90 bash bench/default_session.sh
# Returns $OUT/default.tar; render with python bench/render_repeats.py.
# (the rounds themselves: bench/heavy_rounds.sh)
ONLY=kaggle exec bash bench/heavy_rounds.sh default default plans "${ROUNDS:-4}" \
  "${STRATEGIES:-ideal,gpu-sequential,corun,corun-2,corun-3}" "4096:${BUDGET_S:-400}"
