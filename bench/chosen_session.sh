#!/usr/bin/env bash
# The heavy case's committed plans as the chosen plans, in rounds: the b16384 plan (the
# whole pipeline at emb_fwd in 528 blocks, a warp per row) and its runner-up (the old
# plan, at interaction_bwd), the b8192 plan and its runner-up, beside ideal,
# gpu-sequential and gpu-overlap, each strategy once a round (bench/execute_gpu.py
# --repeats). Usage, with OUT set by the device tool:
#   bash bench/chosen_session.sh
# Returns $OUT/chosen.tar; render with python bench/render_repeats.py.
exec bash bench/heavy_rounds.sh chosen heavy_chosen heavy "${ROUNDS:-4}" \
  ideal,gpu-sequential,gpu-overlap,corun,corun-2 16384:250 8192:220
