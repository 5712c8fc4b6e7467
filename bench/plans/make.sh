#!/usr/bin/env bash
# The plans bench/execute_gpu.py --matrix plans executes, with their predictions:
# corun's plan (plan.json) and the RAP heuristic's (plan-rap.json) for one H200.
# GPUS=1 bash bench/plans/make.sh remakes the one-GPU plans only.
set -euo pipefail
cd "$(dirname "$0")/../.."
for p in kaggle terabyte wide-2x wide-4x; do
  for b in 4096 8192; do
    corun plan --hardware h200 --gpus 1 --pipeline "$p" --model "$(python3 -c "import spec; print(spec.DEFAULT_MODEL_FOR['$p'])")" \
      --batch "$b" --time-limit 10 --quiet --out "bench/plans/$p-b$b" > "bench/plans/$p-b$b.txt"
  done
done
for p in kaggle terabyte; do  # past the host-paced batches: where the GPU sets the pace
  corun plan --hardware h200 --gpus 1 --pipeline "$p" --model "criteo-$p" --batch 16384 \
    --time-limit 10 --quiet --out "bench/plans/$p-b16384" > "bench/plans/$p-b16384.txt"
done
corun plan --hardware h200 --gpus 1 --pipeline heavy --model heavy --batch 4096 --time-limit 10 \
  --quiet --out bench/plans/heavy-b4096 > bench/plans/heavy-b4096.txt
for b in 8192 16384 32768; do  # the heavy case with the fused embedding update
  corun plan --hardware h200 --gpus 1 --pipeline heavy --model heavy-fused --batch "$b" \
    --time-limit 10 --runners-up 2 --quiet --out "bench/plans/heavy-fused-b$b" \
    > "bench/plans/heavy-fused-b$b.txt"
  [ "$b" = 32768 ] && continue  # heavy-small: small tables beside the same pipeline
  corun plan --hardware h200 --gpus 1 --pipeline heavy-small --model heavy-small --batch "$b" \
    --time-limit 10 --runners-up 2 --quiet --out "bench/plans/heavy-small-b$b" \
    > "bench/plans/heavy-small-b$b.txt"
done
for b in 8192 16384 24576 32768; do  # heavy-small's model with the bag kernel's forward (heavy-lean)
  corun plan --hardware h200 --gpus 1 --pipeline heavy-small --model heavy-lean --batch "$b" \
    --time-limit 10 --runners-up 4 --quiet --out "bench/plans/heavy-lean-b$b" \
    > "bench/plans/heavy-lean-b$b.txt"
done
mkdir -p bench/plans/graphs  # the trainer's step replayed as CUDA graphs (--matrix graphs)
for p in kaggle terabyte wide-2x wide-4x; do
  for b in 4096 8192; do
    corun plan --hardware h200 --gpus 1 --pipeline "$p" --model "$(python3 -c "import spec; print(spec.DEFAULT_MODEL_FOR['$p'])")" \
      --batch "$b" --cuda-graphs --time-limit 10 --quiet --out "bench/plans/graphs/$p-b$b" > "bench/plans/graphs/$p-b$b.txt"
  done
done
for b in 8192 12288 16384 24576; do  # heavy-lean graphed between its two embedding kernels
  corun plan --hardware h200 --gpus 1 --pipeline heavy-small --model heavy-lean --batch "$b" \
    --cuda-graphs --time-limit 10 --runners-up 4 --quiet --out "bench/plans/graphs/heavy-lean-b$b" \
    > "bench/plans/graphs/heavy-lean-b$b.txt"
done
corun simulate --hardware h200 --pipeline multihot --model mlperf-dcnv2 --batch 8192 --strategy all --quiet --out bench/plans/multihot-b8192 > bench/plans/multihot-b8192.txt
corun simulate --hardware h200 --pipeline multihot --model mlperf-dcnv2 --batch 4096 --strategy all --quiet --out bench/plans/multihot-b4096 > bench/plans/multihot-b4096.txt
# 4 GPUs (issue 8), and 2 for when only two are lent: corun's and RAP's plans, corun's
# next-best schedule (plan-2.json: within the simulator's error of the choice); corun's
# best plan with preprocessing on the GPUs (plan-gpu.json: planned for a host of one core
# a GPU, so the host workers are out); the owner-mapped variant of the chosen plan, or of
# plan-gpu.json where the chosen one runs on the host CPU (all-CPU plans were chosen on
# several GPUs until costmodel/host.py charged the host workers; since then plan.json and
# plan-gpu.json are the same GPU plan); and PGAS.
# (2-GPU runs 3-5 and 4-GPU runs 1-2 executed older plans; their records carry them.)
drop_traces() {  # the timelines written here (ignored; re-made by corun plan / simulate)
  git ls-files --others -z -- 'bench/plans/*/trace-*.json' 'bench/plans/graphs/*/trace-*.json' \
    'bench/plans/x*/*/trace-*.json' | xargs -0 rm -f
}
if [ "${GPUS:-all}" = 1 ]; then
  drop_traces
  exit 0
fi
for g in 2 4; do
  mkdir -p "bench/plans/x$g"
  for p in kaggle terabyte; do
    for b in 4096 8192; do
      corun plan --hardware h200 --gpus "$g" --pipeline "$p" --model "criteo-$p" --batch "$b" \
        --time-limit 10 --runners-up 1 --quiet --out "bench/plans/x$g/$p-b$b" > "bench/plans/x$g/$p-b$b.txt"
      corun plan --hardware h200 --gpus "$g" --pipeline "$p" --model "criteo-$p" --batch "$b" \
        --host-cores "$g" --time-limit 10 --quiet -o "bench/plans/x$g/$p-b$b/plan-gpu.json"
    done
  done
done
drop_traces
python3 bench/plans/make_multi.py 2
python3 bench/plans/make_multi.py 4
