#!/usr/bin/env bash
# Calibration checked on the H200, held out: each workload's ideal measured first by
# `corun execute --strategy ideal` (its own process), then its plans by separate
# commands; locally, the plans predicted as is and calibrated by those ideal files:
#   python bench/repredict_calibrated.py <the plans' raw files> --calibration <ideal files>
# With OUT set by the device tool; returns $OUT/calibration.tar. PIPES ("kaggle terabyte"):
# the plans matrix's pipelines, each beside its default model; PLANS_BATCH (8192): their
# batch; HEAVY=0 leaves out heavy-fused b16384.
set -u
b=${PLANS_BATCH:-8192}
read -r -a pipes <<< "${PIPES:-kaggle terabyte}"
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
files=()
heavy=("heavy-fused heavy 16384")
[ "${HEAVY:-1}" = 0 ] && heavy=()
plain=()
for p in "${pipes[@]}"; do
  plain+=("$(python -c "import spec; print(spec.DEFAULT_MODEL_FOR['$p'])") $p $b")
done
for w in "${plain[@]}" "${heavy[@]}"; do
  read -r model pipe batch <<< "$w"
  python -m corun.cli execute --strategy ideal --model "$model" --pipeline "$pipe" \
    --batch "$batch" --iterations 300 --warmup 20 -o "$OUT/ideal_${pipe}_b$batch.json" \
    2>&1 | stamp | tail -3
  files+=("ideal_${pipe}_b$batch.json")
done
only=$(IFS=,; echo "${pipes[*]}")
python bench/execute_gpu.py --matrix plans --only "$only" --batches "$b" \
  --iterations 300 --warmup 20 --repeats 2 --budget-s 200 --out "$OUT/plans" 2>&1 | stamp \
  > "$OUT/execute_calplans_b$b.log"
grep -E "===|ms, |Error" "$OUT/execute_calplans_b$b.log" | paste - - | cut -c1-140
mv "$OUT/plans/execute_plans.json" "$OUT/execute_calplans_b$b.json" && rmdir "$OUT/plans"
files+=("execute_calplans_b$b.json" "execute_calplans_b$b.log")
if [ ${#heavy[@]} -gt 0 ]; then
  ONLY=heavy bash bench/heavy_rounds.sh calheavy calheavy heavy-stages 2 \
    ideal,gpu-sequential,corun,at:bottom_mlp_bwd 16384:120
  tar -C "$OUT" -xf "$OUT/calheavy.tar" && rm "$OUT/calheavy.tar"
  files+=(execute_calheavy_b16384.json execute_calheavy_b16384.log)
fi
tar -C "$OUT" -cf "$OUT/calibration.tar" "${files[@]}" && (cd "$OUT" && rm -f "${files[@]}")
