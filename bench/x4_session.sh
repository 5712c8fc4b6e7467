#!/usr/bin/env bash
# One device call on 4 H200s (kind nvidia-h200-x4), in the order the issues need it:
#   1. issue 8: the multi-GPU matrix under torchrun (bench/execute_gpu.py --matrix multigpu),
#      starting no case after MULTI_S seconds;
#   2. then each GPU on its own: GPU 0 measures host against GPU time (bench/host_split.py),
#      and all four profile co-running kernels (corun profile --shard I/4, issue 5) until
#      the call's time is nearly spent. The profile is resumable: the shards already in
#      costmodel/data/h200/ are copied in first, and a rerun goes on where they stop.
# Four processes on four GPUs share one 64-core host: a GPU's measurements can see
# another's host traffic (memory bandwidth, not cores); the profile's pairs are measured
# back to back on one GPU, so each pair sees the same neighbours.
#
# Usage (from the repository root, OUT set by the device tool):
#   bash bench/x4_session.sh [TOTAL_S=560] [MULTI_S=200] [SKIP_MULTI=0]
set -u
TOTAL_S=${1:-560}
MULTI_S=${2:-200}
SKIP_MULTI=${3:-0}
T0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT/profile" "$OUT/logs"
cp costmodel/data/h200/profile*.csv "$OUT/profile/" 2>/dev/null
nvidia-smi --query-gpu=index,name,memory.used --format=csv > "$OUT/logs/gpus.txt"

if [ "$SKIP_MULTI" = 0 ]; then
  timeout $((MULTI_S + 150)) torchrun --standalone --nproc-per-node 4 \
    bench/execute_gpu.py --matrix multigpu --budget-s "$MULTI_S" --out "$OUT" \
    > "$OUT/logs/multigpu.log" 2>&1
  echo "multigpu exit $? after $(( $(date +%s) - T0 )) s" >> "$OUT/logs/multigpu.log"
fi

left_min() {  # minutes left for starting new kernels, keeping 45 s for the last one
  python3 -c "import time; print(max(0.0, ($TOTAL_S - 45 - (time.time() - $T0)) / 60))"
}
CUDA_VISIBLE_DEVICES=0 python3 bench/host_split.py --out "$OUT" > "$OUT/logs/host_split.log" 2>&1 &
for i in 1 2 3; do
  CUDA_VISIBLE_DEVICES=$i python3 -m corun.cli profile --out "$OUT/profile" --shard "$i/4" \
    --budget-minutes "$(left_min)" > "$OUT/logs/profile-$i.log" 2>&1 &
done
wait %1
CUDA_VISIBLE_DEVICES=0 python3 -m corun.cli profile --out "$OUT/profile" --shard 0/4 \
  --budget-minutes "$(left_min)" > "$OUT/logs/profile-0.log" 2>&1
wait
echo "session done after $(( $(date +%s) - T0 )) s" >> "$OUT/logs/multigpu.log"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
