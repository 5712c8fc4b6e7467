#!/usr/bin/env bash
# heavy-fused profiled again with the profiler's trainer built first (as the executor
# builds it since 2026-12-01: bench/results/placement_h200.md), then refitted and replanned
# at b16384 with runners-up. The same three profiles as the capped update's
# (bench/capped_update_session.sh PART=profile, PART=refine): random kernels, the whole
# pipeline at every launch shape, and the committed b16384 plan's kernel. With OUT set by
# the device tool:
#   bash bench/reprofile_session.sh
# returns $OUT/reprofile.tar: the three CSVs, logs, the refitted model and the plan folder.
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T.%3N) $l"; done; }
D=costmodel/data/h200
R="$OUT/reprofile"
mkdir -p "$R"
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
common=(--models heavy-fused --train-pipeline heavy --pipelines heavy --reps 3)
python -m corun.cli profile --out "$R/capped" "${common[@]}" --batches 8192,16384,32768 \
  --shapes 6 --launches 2 --mappings thread,warp --budget-minutes 3.2 2>&1 | stamp > "$R/capped.log"
tail -2 "$R/capped.log"
plans=$(python bench/launch_plans.py --pipeline heavy --model heavy-fused \
  --blocks 132,264,528,1056,2112 --out /tmp/launch-plans) || exit 1
python -m corun.cli profile --out "$R/launches" "${common[@]}" --batches 8192,16384 \
  --shapes 0 --plans "$plans" --budget-minutes 1.5 2>&1 | stamp > "$R/launches.log"
tail -2 "$R/launches.log"
python -m corun.cli profile --out "$R/refine" "${common[@]}" --batches 16384 --shapes 0 \
  --plans bench/plans/heavy-fused-b16384/plan.json --budget-minutes 0.5 2>&1 | stamp > "$R/refine.log"
tail -1 "$R/refine.log"
# emb_bwd alone as each file measured it (median over its rows), old and new
python - "$R" <<'PY'
import csv, statistics, sys
from pathlib import Path
r = Path(sys.argv[1])
for old, new in (("profile-capped-update.csv", "capped"), ("profile-capped-launches.csv", "launches"),
                 ("profile-refine-heavy-fused.csv", "refine")):
    for name, path in (("committed", Path("costmodel/data/h200") / old), ("now", r / new / "profile.csv")):
        rows = list(csv.DictReader(open(path)))
        for b in sorted({x["batch"] for x in rows}, key=int):
            t = [float(x["stage_alone_ms"]) for x in rows if x["batch"] == b and x["stage"] == "emb_bwd"]
            print(f"{old} {name} b{b}: emb_bwd alone median {statistics.median(t):.3f} ms over {len(t)}")
PY
cp "$R/capped/profile.csv" $D/profile-capped-update.csv
cp "$R/launches/profile.csv" $D/profile-capped-launches.csv
cp "$R/refine/profile.csv" $D/profile-refine-heavy-fused.csv
python -m corun.cli fit $D -o $D/model.pkl 2>&1 | stamp > "$R/fit.log"
tail -14 "$R/fit.log"
cp $D/model.pkl $D/model.json $D/model-heldout.png "$R/"
python -m corun.cli plan --hardware h200 --gpus 1 --model heavy-fused --pipeline heavy \
  --batch 16384 --time-limit 10 --runners-up 4 --out "$R/plan-b16384" > "$R/plan-b16384.txt" 2>&1
sed -n '/^strategy/,$p' "$R/plan-b16384.txt"
rm -f "$R"/plan-b16384/trace-*.json
tar -C "$OUT" -cf "$OUT/reprofile.tar" reprofile && rm -rf "$R"
