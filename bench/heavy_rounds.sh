#!/usr/bin/env bash
# A matrix in rounds, one execute_gpu.py process per batch size (--repeats, 300 timed
# iterations after 20): the body of repeats_session.sh, priority_session.sh,
# early_session.sh, prefirst_session.sh, sm_split_warp_session.sh, default_session.sh,
# carveout_session.sh and hold_rounds_session.sh.
# With OUT set by the device tool (ONLY: the matrix's pipelines to run, --only):
#   [ONLY=p,...] bash bench/heavy_rounds.sh TAR PREFIX MATRIX ROUNDS STRATEGIES BATCH:BUDGET_S ...
# writes $OUT/execute_<PREFIX>_b<BATCH>.json and .log for each batch size and returns them
# in one $OUT/<TAR>.tar (the device tool returns few files).
set -u
tar_name=$1 prefix=$2 matrix=$3 rounds=$4 strategies=$5
shift 5
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
files=()
for pair in "$@"; do
  b=${pair%:*}
  python bench/execute_gpu.py --matrix "$matrix" ${ONLY:+--only "$ONLY"} --batches "$b" --iterations 300 \
    --warmup 20 --repeats "$rounds" --strategies "$strategies" --budget-s "${pair#*:}" \
    --out "$OUT/b$b" 2>&1 | stamp > "$OUT/execute_${prefix}_b$b.log"
  grep -E "===|ms, |Error" "$OUT/execute_${prefix}_b$b.log" | paste - - | cut -c1-150
  mv "$OUT/b$b/execute_$matrix.json" "$OUT/execute_${prefix}_b$b.json" && rmdir "$OUT/b$b"
  files+=("execute_${prefix}_b$b.json" "execute_${prefix}_b$b.log")
done
tar -C "$OUT" -cf "$OUT/$tar_name.tar" "${files[@]}" && (cd "$OUT" && rm -f "${files[@]}")
