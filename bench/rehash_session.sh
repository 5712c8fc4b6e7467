#!/usr/bin/env bash
# `corun tune` on one lent H200 for bench/rehash_probe.py's question: eager heavy-lean
# beside `heavy-rehash` (heavy-small with each id hashed twice), the planner's folder under
# bench/plans/rehash/ (made by `corun plan --hardware h200 --gpus 1 --pipeline
# bench/plans/rehash/heavy-rehash.json --model heavy-lean --batch B --time-limit 30
# --runners-up 4 --out bench/plans/rehash/heavy-lean-bB`): ideal, gpu-sequential, the
# choice, its distinct runners-up, its launch steps and its other batch lead, in rounds.
# PART=shapes: b32768's chosen kernel at other stages and launch shapes (the folder
# written by `python bench/rehash_probe.py --shapes bench/plans/rehash/heavy-lean-b32768
# -o bench/plans/rehash/heavy-lean-b32768-shapes --at bottom_mlp_bwd:165,...`).
# With OUT set by the device tool:
#   [PART=b32768|b24576|shapes] [ROUNDS=3] [BUDGET_S=400] bash bench/rehash_session.sh
# returns $OUT/rehash.tar (raw records gzipped, per-round files left out).
set -u
part=${PART:-b32768}
case "$part" in
  b32768) strategies=ideal,gpu-sequential,corun,corun-3,corun-4 ;;  # corun-2/-5: the choice with 2 dense nodes on the host / one ahead (the lead variant)
  b24576) strategies=ideal,gpu-sequential,corun,corun-3,corun-4,corun-5 ;;  # corun-2: the choice with 2 dense nodes on the host
  shapes) strategies=ideal,gpu-sequential,corun-2,corun-3,corun-4,corun-5,corun-6,corun-7 ;;
  *) echo "PART = $part: one of b32768, b24576, shapes" >&2; exit 2 ;;
esac
folder=heavy-lean-$part
[ "$part" = shapes ] && folder=heavy-lean-b32768-shapes
out="$OUT/rehash/$folder"
mkdir -p "$OUT/rehash"
python -m corun.cli tune "bench/plans/rehash/$folder" \
  --pipeline bench/plans/rehash/heavy-rehash.json --strategies "$strategies" \
  --rounds "${ROUNDS:-3}" --iterations 300 --warmup 20 --budget-s "${BUDGET_S:-400}" \
  -o "$out" > "$out.log" 2>&1
rc=$?
grep -vE "^ *(iteration|round)|compiling|preparing|batches and" "$out.log" | tail -40
rm -rf "$out/rounds"
gzip -9n "$out"/*.json 2>/dev/null
tar -C "$OUT" -cf "$OUT/rehash.tar" rehash && rm -rf "$OUT/rehash"
exit $rc
