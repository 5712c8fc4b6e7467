#!/usr/bin/env bash
# heavy-lean on one lent H200 (issue 6's heavy case): heavy-small with the trainer's
# bag-kernel forward (backend/embedding_fwd.py). With OUT set by the device tool:
#   PART=measure bash bench/heavy_lean_session.sh   the launch and trainer tests on the GPU,
#       the forward alone, PyTorch against the
#       bag kernel (bench/embedding_forward.py), then ideal, the baselines and the one
#       kernel at each stage at b16384 in 2 rounds (bench/execute_gpu.py --matrix heavy-lean)
#   PART=profile bash bench/heavy_lean_session.sh   heavy-lean's co-running profile for the
#       learned model: random kernels and the whole pipeline at five launch shapes
#   PART=plans bash bench/heavy_lean_session.sh     corun's plan and its runners-up beside the
#       baselines and the one kernel two batches ahead at four stages, b16384, 3 rounds
#   PART=variants ...   the best kernel's launch shapes, +pre and +nocheck (2 rounds)
#   PART=tune ...       corun tune on bench/plans/heavy-lean-b16384 (3 rounds)
#   PART=batches ...    b24576 and b32768, where the GPU paces the step (2 rounds each)
# (bench/results/heavy_case_record.md, top, has each part's numbers and reports)
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
case "${PART:-measure}" in
measure)
  NUMBA_ENABLE_CUDASIM=0 python -m pytest -q -p no:cacheprovider tests/test_launch.py \
    tests/test_trainer.py 2>&1 | tail -3
  python bench/embedding_forward.py --out "$OUT" \
    --models heavy-fused,heavy-small,criteo-kaggle --batches 8192,16384 2>&1 | stamp
  python bench/execute_gpu.py --matrix heavy-lean --batches 16384 --strategies \
    ideal,gpu-sequential,gpu-overlap,at:emb_fwd+b1056,at:interaction_bwd+b1056,at:bottom_mlp_bwd+b1056,at:emb_bwd+b1056,at:optimizer+ahead2+b1056 \
    --repeats 2 --budget-s 300 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
profile)
  common=(--models heavy-lean --train-pipeline heavy-small --pipelines heavy-small --reps 3)
  python -m corun.cli profile --out "$OUT/random" "${common[@]}" --batches 8192,16384 \
    --shapes 5 --launches 2 --mappings thread,warp --budget-minutes 3 2>&1 | stamp > "$OUT/random.log"
  tail -2 "$OUT/random.log"
  plans=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 132,264,528,1056,2112 --out /tmp/launch-plans) || exit 1
  python -m corun.cli profile --out "$OUT/launches" "${common[@]}" --batches 8192,16384 \
    --shapes 0 --plans "$plans" --budget-minutes 2 2>&1 | stamp > "$OUT/launches.log"
  tail -2 "$OUT/launches.log"
  ;;
plans)
  python bench/execute_gpu.py --matrix heavy-lean --batches "${BATCHES:-16384}" \
    --strategies "${STRATEGIES:-ideal,gpu-sequential,gpu-overlap,corun,corun-2,corun-3,at:emb_fwd+ahead2+b1056,at:interaction_bwd+ahead2+b1056,at:bottom_mlp_bwd+ahead2+b1056,at:optimizer+ahead2+b1056}" \
    --repeats "${REPEATS:-3}" --budget-s 300 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
variants)
  python bench/execute_gpu.py --matrix heavy-lean --batches 16384 --strategies \
    ideal,gpu-sequential,at:bottom_mlp_bwd+ahead2+b1056,at:bottom_mlp_bwd+ahead2+b2112,at:bottom_mlp_bwd+ahead2+b528,at:bottom_mlp_bwd+ahead2+b1056+pre,at:interaction_bwd+ahead2+b2112,at:bottom_mlp_bwd+ahead2+b1056+nocheck,gpu-sequential+nocheck \
    --repeats 2 --budget-s 200 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
tune)
  python -m corun.cli tune bench/plans/heavy-lean-b16384 -o "$OUT/tune" --rounds 3 \
    --budget-s 170 2>&1 | stamp
  ;;
batches)
  python bench/execute_gpu.py --matrix heavy-lean --batches 24576 --strategies \
    ideal,gpu-sequential,corun,at:bottom_mlp_bwd+ahead2+b1056 --repeats 2 --budget-s 80 \
    --out "$OUT/b24576" 2>&1 | grep -v "iteration" | stamp
  python bench/execute_gpu.py --matrix heavy-lean --batches 32768 --strategies \
    ideal,gpu-sequential,corun,at:bottom_mlp_bwd+ahead2+b1056,at:bottom_mlp_bwd+ahead2+b2112,at:interaction_bwd+ahead2+b2112 \
    --repeats 2 --budget-s 150 --out "$OUT/b32768" 2>&1 | grep -v "iteration" | stamp
  ;;
*)
  echo "PART must be measure, profile, plans, variants, tune or batches" >&2
  exit 2
  ;;
esac
