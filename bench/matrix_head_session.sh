#!/usr/bin/env bash
# The matrix as planned at HEAD (kaggle, terabyte, wide-2x, wide-4x at batch 4096
# and 8192 on one H200: corun's plan beside ideal, gpu-sequential and RAP's heuristic),
# measured in rounds. Run from the repository root with $OUT set:
#   PART=eager bash bench/matrix_head_session.sh    the eager step (bench/plans/<p>-b<b>), 2 rounds
#   PART=graphs bash bench/matrix_head_session.sh   the step as CUDA graphs (bench/plans/graphs), 2 rounds
#   PART=both bash bench/matrix_head_session.sh     both, one after the other (about 4 minutes)
# Render with python bench/render_repeats.py RAW -o OUT.md.
set -uo pipefail
eager() {
  python bench/execute_gpu.py --matrix plans --only kaggle,terabyte,wide-2x,wide-4x \
    --batches 4096,8192 --strategies ideal,gpu-sequential,rap,corun --repeats 2 \
    --budget-s 420 --out "$OUT/eager"
}
graphs() {
  python bench/execute_gpu.py --matrix graphs --strategies ideal,gpu-sequential,rap,corun \
    --repeats 2 --budget-s 420 --out "$OUT/graphs"
}
case "${PART:-eager}" in
eager) eager ;;
graphs) graphs ;;
both) eager; graphs ;;
*)
  echo "PART must be eager, graphs or both" >&2
  exit 2
  ;;
esac
