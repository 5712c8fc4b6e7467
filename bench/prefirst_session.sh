#!/usr/bin/env bash
# Can the heavy kernel hide inside the embedding update? Released at emb_bwd with the
# training stream first, it waits for all of the update's blocks (profile: 0.00 ms of
# overlap, costmodel/data/h200/profile-launches.csv); with the preprocessing stream first
# ("+pre", RunSettings.preprocess_first) its blocks take the SM slots the update's
# blocks free as they end, and few blocks ("+b<N>") leave the update most of them. The
# update waits on L2 atomics, the kernel on integer maths. "+ahead2": the batch two
# steps ahead, so the next step does not wait for its assembly. In rounds
# (bench/execute_gpu.py --repeats). Usage, with OUT set by the device tool:
#   bash bench/prefirst_session.sh
# Returns $OUT/prefirst.tar; render with python bench/render_repeats.py.
exec bash bench/heavy_rounds.sh prefirst prefirst heavy-stages "${ROUNDS:-3}" \
  ideal,gpu-sequential,at:emb_fwd,at:emb_bwd,at:emb_bwd+pre,at:emb_bwd+pre+b132,at:emb_bwd+pre+b264,at:emb_bwd+pre+ahead2+b132,at:emb_bwd+pre+ahead2+b264,at:interaction_bwd+pre+b264 \
  16384:200 8192:130
