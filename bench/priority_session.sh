#!/usr/bin/env bash
# Does the stream priority decide gpu-overlap's lead over corun's heavy plans? gpu-overlap
# runs its kernel level with training (sim.strategy: training_priority_high False), corun's
# plans put training first; the profile that the learned model is fitted on always put
# training first. In rounds (bench/execute_gpu.py --repeats), each plan both ways
# ("+high" / "+low"). Usage, with OUT set by the device tool:
#   bash bench/priority_session.sh
# Returns $OUT/priority.tar; render with python bench/render_repeats.py.
# (the rounds themselves: bench/heavy_rounds.sh)
exec bash bench/heavy_rounds.sh priority heavy heavy "${ROUNDS:-5}" \
  ideal,gpu-sequential,gpu-overlap,gpu-overlap+high,corun,corun+low 8192:140 16384:200
