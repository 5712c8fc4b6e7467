#!/usr/bin/env bash
# Does a kernel whose blocks reach the GPU before emb_fwd's hide better than one released
# with it? Released at emb_fwd, the heavy kernel's blocks wait behind emb_fwd's and run
# on into the small MLP stages (bench/results/heavy_rounds_h200.md); released at the
# optimizer, two batches ahead (Plan.batches_ahead = 2, "+ahead2"), they are on the SMs
# first and emb_fwd takes the rest. "+b<N>": N blocks, fewer slots held. In rounds
# (bench/execute_gpu.py --repeats). Usage, with OUT set by the device tool:
#   bash bench/early_session.sh
# Returns $OUT/early.tar; render with python bench/render_repeats.py.
# (the rounds themselves: bench/heavy_rounds.sh)
exec bash bench/heavy_rounds.sh early early heavy-stages "${ROUNDS:-3}" \
  ideal,gpu-sequential,at:emb_fwd,at:emb_fwd+ahead2,at:optimizer+ahead2,at:optimizer+ahead2+b528,at:optimizer+ahead2+b264 \
  8192:110 16384:170
