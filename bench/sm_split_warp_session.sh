#!/usr/bin/env bash
# The SM split again, with the warp-per-row kernels (FusedKernel.warp_rows): the thread-per-
# row kernel on SMs of its own still stretched training by 56-85% of its own time
# (bench/results/heavy_probe_h200.md, sm_split_repeat.sh); the warp kernel moves ~1.7x
# fewer memory transactions. gpu-overlap's kernel on N SMs of its own ("+sm<N>",
# RunSettings.preprocess_sms), one or two batches ahead ("+ahead2"), in rounds
# (bench/execute_gpu.py --repeats). Usage, with OUT set by the device tool:
#   bash bench/sm_split_warp_session.sh
# Returns $OUT/smwarp.tar; render with python bench/render_repeats.py.
bash bench/heavy_rounds.sh smwarp8 smwarp heavy "${ROUNDS:-3}" \
  ideal,gpu-sequential,gpu-overlap,gpu-overlap+sm16,gpu-overlap+sm24,gpu-overlap+sm32,gpu-overlap+sm16+ahead2,gpu-overlap+sm24+ahead2 \
  8192:120
exec bash bench/heavy_rounds.sh smwarp16 smwarp heavy "${ROUNDS16:-2}" \
  ideal,gpu-sequential,gpu-overlap,gpu-overlap+sm16,gpu-overlap+sm16+ahead2,gpu-overlap+sm24+ahead2 \
  16384:110
