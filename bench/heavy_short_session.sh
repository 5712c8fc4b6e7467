#!/usr/bin/env bash
# heavy-short beside heavy-hot on one lent H200 (issue 6's heavy case): the hot-row
# embedding update (backend/embedding_sgd.py) makes the step faster, and raw lists of 36
# 32-bit ids keep the host link under it. Run from the repository root with $OUT set:
#   PART=discover bash bench/heavy_short_session.sh   the hot-row update against the
#       plain one (bench/hot_row_update.py; stops here if either disagrees with
#       index_add_ by more than 1%); graphed ideal, gpu-sequential and the one kernel at
#       several stages and launch shapes at b8192 and b16384 in 2 rounds; heavy-hot's
#       co-running profile (launched and resident whole-pipeline kernels, random kernels)
#   PART=plans ...   corun tune on bench/plans/graphs/heavy-short-b16384 (3 rounds); the
#       b8192 folder's plan and runner-up beside the baselines (2 rounds); heavy-hot's
#       launched whole-pipeline kernels profiled
#   PART=variants ...   the b16384 and b8192 plans with the batch's assembly after the
#       step's launches, at 80 and 5 ids a thread, on 16 SMs of their own, training level
#       with preprocessing, preprocessing first (3 rounds)
#   PART=batches ...   b24576 and b32768: the baselines, the plan folders' choice and
#       runner-up, the kernel at emb_bwd in 528 and 1056 blocks (2 rounds)
#   PART=plain ...   heavy-short beside heavy-lean (the plain fused update), b16384: the
#       baselines and the one kernel at interaction_bwd and at emb_bwd (2 rounds)
#   PART=remade ...   corun tune on the plan folders re-made with the graphed heavy stages
#       (bench/plans/graphs/heavy-short-b16384-remade, -b8192-remade; 3 rounds each)
#   PART=update-grid ...   the fused embedding update on 1 and 2 blocks an SM ("+ub<N>";
#       4 by default) beside the kernel at emb_bwd, where it leaves the kernel more room:
#       ideal, gpu-sequential and the kernel's plans each way, b16384 and b8192, 3 rounds
#   PART=lead ...   corun tune on the re-made plan folders with the chosen plan's other
#       batch lead among its variants (corun-ahead<N>): b16384 3 rounds, b8192 2
#   PART=lead-plan ...   corun tune on bench/plans/graphs/heavy-short-b16384-lead, planned
#       with planner.search.AHEAD_MARGIN (the choice two ahead), 3 rounds
#   PART=tail ...   heavy-hot's resident profile of the whole-pipeline kernels (264, 528
#       and 1056 blocks) at b16384 with the kernel 0.25 and 0.4 ms under way when the
#       stage starts (--lead-ms; 0.55 ms alone): a kernel's tail carried into a stage,
#       beside the committed rows' 0.01 ms lead
#   PART=tail-more ...   more tails for the cost model's next fit: heavy-hot b8192 (the
#       kernel in 132-1056 blocks 0.1 and 0.2 ms under way, 0.28 ms alone) and heavy-lean
#       beside heavy-small b16384 (198-1056 blocks, 0.25 and 0.45 ms under way)
# (The device tool returns few files: pack $OUT into one archive after it.)
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T) $l"; done; }
profile() {  # log name, then corun profile's arguments
  local log="$OUT/$1.log"
  shift
  python -m corun.cli profile "$@" 2>&1 | stamp > "$log"
  tail -2 "$log"
}
launch_plans() {  # the whole heavy-short pipeline at these blocks, both row mappings
  python bench/launch_plans.py --pipeline heavy-short --model heavy-hot --blocks "$1" \
    --out "/tmp/launch-plans-${1//,/-}"
}
short=(--models heavy-hot --train-pipeline heavy-short --pipelines heavy-short)
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
case "${PART:-discover}" in
discover)
  python bench/hot_row_update.py --out "$OUT/update" 2>&1 | stamp
  python - "$OUT/update/hot_row_update.json" <<'EOF' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
worst = max(c["relative_error"] for r in rows for c in r["cases"])
print(f"largest relative difference from index_add_: {worst:.2e}")
sys.exit(worst > 1e-2)
EOF
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 8192,16384 --repeats 2 \
    --strategies ideal,gpu-sequential,at:emb_fwd+b264+ahead2,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b396+ahead2,at:bottom_mlp_bwd+b198+ahead2,at:top_mlp_bwd+b198+ahead2,at:emb_bwd+b264+ahead2,at:emb_bwd+b132+ahead2 \
    --budget-s 150 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  plans=$(launch_plans 132,198,264,396,528,1056) || exit 1
  profile launched --out "$OUT/profile" "${short[@]}" --reps 3 --batches 16384,8192 \
    --shapes 0 --plans "$plans" --budget-minutes 1.0
  profile resident --out "$OUT/profile" "${short[@]}" --reps 3 --batches 16384,8192 \
    --resident --shapes 0 --plans "$plans" --budget-minutes 1.0
  profile random --out "$OUT/profile" "${short[@]}" --reps 3 --batches 16384,8192 \
    --resident --shapes 4 --launches 2 --mappings thread,warp --budget-minutes 0.6
  ;;
plans)
  python -m corun.cli tune bench/plans/graphs/heavy-short-b16384 -o "$OUT/tune" --rounds 3 \
    --budget-s 200 2>&1 | stamp
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 8192 --repeats 2 \
    --strategies ideal,gpu-sequential,corun,corun-2,at:emb_bwd+b264+ahead2 \
    --budget-s 70 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  plans=$(launch_plans 132,264,528,1056) || exit 1
  profile launched --out "$OUT/profile" "${short[@]}" --reps 3 --batches 16384,8192 \
    --shapes 0 --plans "$plans" --budget-minutes 1.3
  ;;
variants)
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384,8192 --repeats 3 \
    --strategies ideal,gpu-sequential,corun,corun+late,corun+ipt80,corun+ipt5,corun+sm16,corun+low,corun+pre \
    --budget-s 260 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
batches)
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 24576,32768 --repeats 2 \
    --strategies ideal,gpu-sequential,corun,corun-2,at:emb_bwd+b528+ahead2,at:emb_bwd+b1056+ahead2 \
    --budget-s 240 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
plain)
  python bench/execute_gpu.py --matrix heavy-short-graphs --model heavy-lean --batches 16384 \
    --repeats 2 --strategies ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,at:emb_bwd+b264+ahead2 \
    --budget-s 60 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
remade)
  for b in 16384 8192; do
    python -m corun.cli tune "bench/plans/graphs/heavy-short-b$b-remade" -o "$OUT/tune-b$b" \
      --rounds 3 --budget-s 150 2>&1 | stamp
  done
  ;;
update-grid)
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384,8192 --repeats 3 \
    --strategies ideal,ideal+ub2,ideal+ub1,gpu-sequential,at:emb_bwd+b1056+ahead2,at:emb_bwd+b1056+ahead2+ub2,at:emb_bwd+b1056+ahead2+ub1,at:emb_bwd+b528+ahead2+ub2,at:emb_bwd+b264+ahead2+ub2,at:interaction_bwd+b198+ahead2+ub2 \
    --budget-s 400 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
lead)
  timeout 400 python -m corun.cli tune bench/plans/graphs/heavy-short-b16384-remade \
    -o "$OUT/tune-b16384" --rounds 3 --budget-s 230 2>&1 | stamp
  timeout 150 python -m corun.cli tune bench/plans/graphs/heavy-short-b8192-remade \
    -o "$OUT/tune-b8192" --rounds 2 --budget-s 60 2>&1 | stamp
  ;;
lead-plan)
  timeout 500 python -m corun.cli tune bench/plans/graphs/heavy-short-b16384-lead \
    -o "$OUT/tune" --rounds 3 --budget-s 300 2>&1 | stamp
  ;;
tail)
  plans=$(launch_plans 264,528,1056) || exit 1
  for lead in 0.25 0.4; do
    profile "tail-$lead" --out "$OUT/profile" "${short[@]}" --reps 3 --batches 16384 \
      --resident --lead-ms "$lead" --shapes 0 --plans "$plans" --budget-minutes 2.0
  done
  ;;
tail-more)
  plans=$(launch_plans 132,264,528,1056) || exit 1
  for lead in 0.1 0.2; do
    profile "tail-b8192-$lead" --out "$OUT/profile-hot" "${short[@]}" --reps 3 \
      --batches 8192 --resident --lead-ms "$lead" --shapes 0 --plans "$plans" \
      --budget-minutes 1.5
  done
  lean=$(python bench/launch_plans.py --pipeline heavy-small --model heavy-lean \
    --blocks 198,264,396,1056 --out /tmp/launch-plans-lean) || exit 1
  for lead in 0.25 0.45; do
    profile "tail-lean-$lead" --out "$OUT/profile-lean" --models heavy-lean \
      --train-pipeline heavy-small --pipelines heavy-small --reps 3 --batches 16384 \
      --resident --lead-ms "$lead" --shapes 0 --plans "$lean" --budget-minutes 1.5
  done
  ;;
*)
  echo "PART must be discover, plans, variants, batches, plain, remade, update-grid, lead, lead-plan, tail or tail-more" >&2
  exit 2
  ;;
esac
