#!/usr/bin/env bash
# One device call on the lent H200s, in the order the issues need it:
#   1. with 4 GPUs (kind nvidia-h200-x4; 2 on nvidia-h200-x2) and MULTI=1, issue 8's
#      multi-GPU matrix under torchrun (bench/execute_gpu.py --matrix multigpu), starting no
#      case after MULTI_S s (the whole matrix takes about 400 s), then rank 0's host
#      profile of the distributed step (bench/distributed_host.py);
#   2. with HOST_SPLIT=1, host against GPU time on GPU 0 (bench/host_split.py, issue 6);
#   3. the co-running profile (corun profile, issue 5) on every GPU, one shard each, until
#      the call's TOTAL_S is nearly spent. It is resumable: the CSVs already in
#      costmodel/data/h200/ are copied in first and a rerun goes on where they stop.
# On several GPUs, host_split and the shards share one host: a GPU's measurements can see
# another's host memory traffic; each profile pair is measured back to back on one GPU,
# so both halves of a pair see the same neighbours.
#
# Usage, from the repository root with OUT set by the device tool:
#   TOTAL_S=560 MULTI=1 MULTI_S=200 HOST_SPLIT=1 PROFILE_ARGS= bash bench/h200_session.sh
set -u
TOTAL_S=${TOTAL_S:-560}
MULTI=${MULTI:-1}
MULTI_S=${MULTI_S:-200}
HOST_SPLIT=${HOST_SPLIT:-1}
PROFILE_ARGS=${PROFILE_ARGS:-}  # e.g. "--batches 2048,8192,16384 --launches 2"
T0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT/profile" "$OUT/logs"
cp costmodel/data/h200/profile*.csv "$OUT/profile/" 2>/dev/null
nvidia-smi --query-gpu=index,name,memory.used --format=csv > "$OUT/logs/gpus.txt"
NGPU=$(nvidia-smi -L | wc -l)
log() { echo "$* after $(( $(date +%s) - T0 )) s" >> "$OUT/logs/session.log"; }

if [ "$MULTI" = 1 ] && [ "$NGPU" -ge 2 ]; then
  NPROC=$([ "$NGPU" -ge 4 ] && echo 4 || echo 2)  # the plans of bench/plans/x$NPROC
  timeout $((MULTI_S + 150)) torchrun --standalone --nproc-per-node "$NPROC" \
    bench/execute_gpu.py --matrix multigpu --budget-s "$MULTI_S" --out "$OUT" \
    > "$OUT/logs/multigpu.log" 2>&1
  log "multigpu exit $?"
  timeout 120 torchrun --standalone --nproc-per-node "$NPROC" bench/distributed_host.py \
    --out "$OUT/dh" > "$OUT/logs/distributed_host.log" 2>&1  # where the host step goes
  log "distributed_host exit $?"
fi

left_min() {  # minutes left for starting new kernels, keeping 45 s for the last one
  python3 -c "import time; print(max(0.0, ($TOTAL_S - 45 - (time.time() - $T0)) / 60))"
}
profile() {  # GPU shard
  CUDA_VISIBLE_DEVICES=$1 python3 -m corun.cli profile --out "$OUT/profile" \
    --shard "$2/$NGPU" --budget-minutes "$(left_min)" $PROFILE_ARGS \
    > "$OUT/logs/profile-$2.log" 2>&1
  log "profile shard $2 exit $?"
}
for ((i = 1; i < NGPU; i++)); do profile "$i" "$i" & done
if [ "$HOST_SPLIT" = 1 ]; then
  CUDA_VISIBLE_DEVICES=0 python3 bench/host_split.py --out "$OUT" \
    > "$OUT/logs/host_split.log" 2>&1
  log "host_split exit $?"
fi
profile 0 0
wait
log "session done"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
