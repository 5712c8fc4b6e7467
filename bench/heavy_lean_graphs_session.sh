#!/usr/bin/env bash
# heavy-lean with its step replayed as CUDA graphs between its two embedding kernels
# (backend/graphed.py) on one lent H200 (issue 6's heavy case). With OUT set by the
# device tool:
#   PART=measure bash bench/heavy_lean_graphs_session.sh   the graphed-step and launch
#       tests on the GPU, then at b16384 ideal (graphed and eager), gpu-sequential,
#       corun's plan and two runners-up, the one kernel two ahead at four stages
#       (2 rounds); at b24576 ideal, gpu-sequential, corun's plan, one kernel (2 rounds)
#   PART=plans ...   the GPU tests again, then at b16384 corun's re-made plans (two
#       batches ahead) and the one kernel one batch ahead, which the host no longer
#       waits for (Model.reads_ids_by_offsets), graphed and eager (--matrix heavy-lean),
#       beside the baselines, 2 rounds each; at b24576 graphed, corun's plan (2 rounds)
#   PART=thin ...    the one kernel two ahead in 132 or 264 blocks at four stages, b16384
#   PART=thin2 ...   interaction_bwd in 132-528 blocks, one ahead, and 264 blocks elsewhere
#   PART=confirm ... interaction_bwd in 198 and 264 blocks beside corun's plan, 3 rounds
#   PART=chosen ...  corun's plan and its four runners-up, made with the measured release
#       steps (costmodel/release_steps.py), beside the 198-block kernel, 3 rounds
#   PART=tune ...    corun tune on that plan folder: every candidate in 3 rounds, the
#       fastest kept (tuned.json)
#   PART=final ...   the folder re-made with the measured host link: corun's plan and its
#       runner-up beside the baselines, 3 rounds
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
run() {  # batch, strategies, repeats, budget (s)
  python bench/execute_gpu.py --matrix heavy-lean-graphs --batches "$1" --strategies "$2" \
    --repeats "$3" --budget-s "$4" --out "$OUT/b$1" 2>&1 | grep -v "iteration" | stamp
}
case "${PART:-measure}" in
measure)
  NUMBA_ENABLE_CUDASIM=0 python -m pytest -q -p no:cacheprovider tests/test_graphed.py \
    tests/test_launch.py 2>&1 | tail -3
  run 16384 ideal,ideal+eager,gpu-sequential,corun,corun-2,corun-3,at:emb_fwd+ahead2+b1056,at:interaction_bwd+ahead2+b1056,at:bottom_mlp_bwd+ahead2+b1056,at:optimizer+ahead2+b1056 2 260
  run 24576 ideal,gpu-sequential,corun,at:bottom_mlp_bwd+ahead2+b1056 2 110
  ;;
plans)
  NUMBA_ENABLE_CUDASIM=0 python -m pytest -q -p no:cacheprovider tests/test_graphed.py \
    tests/test_launch.py tests/test_trainer.py 2>&1 | tail -3
  run 16384 ideal,gpu-sequential,corun,corun-2,corun-3,at:emb_fwd+b1056,at:optimizer+ahead2+b1056 2 150
  python bench/execute_gpu.py --matrix heavy-lean --batches 16384 --strategies \
    ideal,gpu-sequential,corun,corun-2,at:bottom_mlp_bwd+b1056,at:bottom_mlp_bwd+ahead2+b1056 \
    --repeats 2 --budget-s 150 --out "$OUT/eager" 2>&1 | grep -v "iteration" | stamp
  run 24576 ideal,gpu-sequential,corun 2 80
  ;;
thin)  # the kernel in fewer blocks, leaving SM slots to the step's own kernels
  run 16384 ideal,gpu-sequential,at:emb_fwd+ahead2+b132,at:emb_fwd+ahead2+b264,at:emb_bwd+ahead2+b132,at:emb_bwd+ahead2+b264,at:interaction_bwd+ahead2+b264,at:optimizer+ahead2+b264,at:optimizer+ahead2+b264+low 2 200
  ;;
thin2)  # around the best of PART=thin: interaction_bwd two ahead in 264 blocks
  run 16384 ideal,gpu-sequential,at:interaction_bwd+ahead2+b132,at:interaction_bwd+ahead2+b198,at:interaction_bwd+ahead2+b264,at:interaction_bwd+ahead2+b396,at:interaction_bwd+ahead2+b528,at:interaction_bwd+b264,at:top_mlp_bwd+ahead2+b264,at:bottom_mlp_bwd+ahead2+b264,at:top_mlp_fwd+ahead2+b264 2 200
  ;;
confirm)  # the best of PART=thin2 again, in another process, beside corun's plan
  run 16384 ideal,gpu-sequential,corun,at:interaction_bwd+ahead2+b198,at:interaction_bwd+ahead2+b264 3 200
  ;;
chosen)  # what corun plan chooses once the cost model has the profiled release steps
  run 16384 ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5,at:interaction_bwd+ahead2+b198 3 330
  ;;
tune)
  python -m corun.cli tune bench/plans/graphs/heavy-lean-b16384 -o "$OUT/tune" --rounds 3 \
    --budget-s 200 2>&1 | grep -v "iteration" | stamp
  ;;
final)
  run 16384 ideal,gpu-sequential,corun,corun-2 3 100
  ;;
*)
  echo "PART must be measure, plans, thin, thin2, confirm, chosen, tune or final" >&2
  exit 2
  ;;
esac
