#!/usr/bin/env bash
# The same `corun execute --strategy ideal` in separate processes, one after another, on
# one lent GPU: how far a training stage moves from process to process (the tune run of
# 2026-12-01 measured heavy-fused b16384's emb_bwd at 3.02 ms in one process and 2.83 in
# the next). With OUT set by the device tool:
#   [N=3] [MODEL=heavy-fused PIPELINE=heavy BATCH=16384] bash bench/process_spread.sh
# writes $OUT/spread/ideal-<i>[-expandable].json (every third process with
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: other memory placement) and prints
# each one's iteration and stage medians.
set -u
mkdir -p "$OUT/spread"
n=${N:-3}
for i in $(seq 1 "$n"); do
  for alloc in default expandable; do
    name="ideal-$i"; conf=""
    if [ "$alloc" = expandable ]; then name="$name-expandable"; conf="expandable_segments:True"; fi
    PYTORCH_CUDA_ALLOC_CONF=$conf python -m corun.cli execute --strategy ideal \
      --model "${MODEL:-heavy-fused}" --pipeline "${PIPELINE:-heavy}" --batch "${BATCH:-16384}" \
      --iterations 300 --warmup 20 --quiet -o "$OUT/spread/$name.json" > /dev/null
    python - "$OUT/spread/$name.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
st = " ".join(f"{k} {v['median_ms']:.3f}" for k, v in m["stages"].items())
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {m['iteration']['median_ms']:.3f} ms; {st}")
PY
  done
done
