#!/usr/bin/env bash
# Dynamically scheduled preprocessing kernels (FusedKernel.dynamic: blocks take units of
# rows from a ticket) against fixed shares, graphed, on one lent H200. Run from the
# repository root with $OUT set:
#   PART=first bash bench/dynamic_session.sh   heavy-short beside heavy-hot, b16384 and
#       b8192: the baselines, gpu-sequential's kernel dynamic, the plan folder's choice
#       and it dynamic, the one kernel dynamic at emb_bwd (1056 blocks), interaction_bwd
#       and top_mlp_bwd (528), 3 rounds; then beside heavy-lean (the plain update), b16384:
#       the one kernel at interaction_bwd in 198 blocks, fixed and dynamic, and in 396
#       dynamic (2 rounds)
# (The device tool returns few files: pack $OUT into one archive after it.)
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
case "${PART:-first}" in
first)
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384,8192 --repeats 3 \
    --strategies ideal,gpu-sequential,gpu-sequential+dyn,corun,corun+dyn,at:emb_bwd+b1056+ahead2+dyn,at:interaction_bwd+b528+ahead2+dyn,at:top_mlp_bwd+b528+ahead2+dyn \
    --budget-s 300 --out "$OUT/hot" 2>&1 | grep -v "iteration" | stamp
  python bench/execute_gpu.py --matrix heavy-short-graphs --model heavy-lean --batches 16384 \
    --repeats 2 --strategies ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b198+ahead2+dyn,at:interaction_bwd+b396+ahead2+dyn \
    --budget-s 100 --out "$OUT/plain" 2>&1 | grep -v "iteration" | stamp
  ;;
*)
  echo "PART must be first" >&2
  exit 2
  ;;
esac
