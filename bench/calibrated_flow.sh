#!/usr/bin/env bash
# The README's calibrated flow on the default workload, end to end on one GPU: plan
# uncalibrated, measure ideal, plan calibrated by it, execute that plan and
# gpu-sequential, and report predicted against measured (the calibrated column too).
# With OUT set by the device tool; writes $OUT/flow (plans, measurements, report).
set -eu
F=$OUT/flow
mkdir -p "$F"
corun() { python -m corun.cli "$@"; }
corun plan --quiet --out "$F/plain" | tail -12
corun execute --strategy ideal --iterations 300 --warmup 20 -o "$F/ideal.json" --quiet
corun plan --quiet --calibration "$F/ideal.json" --out "$F/calibrated" | tail -14
corun execute "$F/calibrated/plan.json" --label corun --iterations 300 --warmup 20 \
  -o "$F/corun.json" --quiet
corun execute --strategy gpu-sequential --iterations 300 --warmup 20 -o "$F/seq.json" --quiet
corun report "$F"/calibrated/prediction-{ideal,corun,gpu-sequential}.json "$F/ideal.json" \
  "$F/corun.json" "$F/seq.json" -o "$F/report"
sed -n '/Predicted against measured/,/stages.png/p' "$F/report/summary.md"
rm -f "$F"/*/trace-*.json "$F"/report/*.svg
