#!/usr/bin/env bash
# The heavy case in rounds: ideal, gpu-sequential, gpu-overlap, corun's committed plans
# (bench/plans/heavy-fused-b*) and RAP's, each strategy once a round, 5 rounds a batch
# size in one process (bench/execute_gpu.py --repeats), so that which strategy is fastest
# is judged against the spread of the host's pace, not one median each. Usage, with OUT
# set by the device tool:
#   bash bench/repeats_session.sh
# Returns $OUT/repeats.tar (execute_heavy_b8192.json, _b16384.json and the logs); render
# with python bench/render_repeats.py.
# (the rounds themselves: bench/heavy_rounds.sh)
exec bash bench/heavy_rounds.sh repeats heavy heavy "${ROUNDS:-5}" \
  ideal,gpu-sequential,gpu-overlap,corun,rap 8192:230 16384:270
