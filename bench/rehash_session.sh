#!/usr/bin/env bash
# `corun tune` on one lent H200 for bench/rehash_probe.py's question: eager heavy-lean
# beside the `heavy-rehash` preset (heavy-small with each id hashed twice). The folders
# under bench/plans/rehash/ were made by `corun plan --hardware h200 --gpus 1 --pipeline
# heavy-rehash --model heavy-lean --batch B --time-limit 30 --runners-up 4 --out
# bench/plans/rehash/heavy-lean-bB` (runs 1-2 read the pipeline from a file equal to the
# preset; the -graphs folders with --cuda-graphs, out heavy-lean-bB-graphs), and
# heavy-lean-b32768-shapes by `python bench/rehash_probe.py --shapes ...`.
# PART=b32768: ideal, gpu-sequential, the choice, its runners-up, its launch steps and its
# other batch lead, in rounds (run 1 at 414dfbe7 tuned the folder planned before PART=confirm's
# profile was in the model: ideal, gpu-sequential, corun, corun-3, corun-4; its corun-2 and
# corun-5 were the choice with 2 dense nodes on the host and one batch ahead). PART=shapes: b32768's chosen kernel
# at other stages and launch shapes (corun-2..7). PART=confirm: on another start, the best
# two shapes and 198 blocks' neighbours at interaction_bwd (corun-8..10); then heavy-lean
# b32768 profiled beside heavy-rehash's whole pipeline at 132-1056 blocks (a warp a row),
# launched and resident (installed as costmodel/data/h200/lookup/). With OUT set by the device tool:
#   [PART=b32768|shapes|confirm|b16384|b32768-graphs|b16384-graphs] [ROUNDS=3] [BUDGET_S=400] \
#     bash bench/rehash_session.sh
# returns $OUT/rehash-$PART.tar (raw records gzipped, per-round files left out; runs 1-4
# wrote it as $OUT/rehash.tar). PART=b16384, b32768-graphs and b16384-graphs (session 52)
# tune the folders of those names.
set -u
part=${PART:-b32768}
case "$part" in
  b32768|b16384|b32768-graphs|b16384-graphs)
    strategies=ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5 ;;
  shapes) strategies=ideal,gpu-sequential,corun-2,corun-3,corun-4,corun-5,corun-6,corun-7 ;;
  confirm) strategies=ideal,gpu-sequential,corun-3,corun-7,corun-8,corun-9,corun-10 ;;
  *) echo "PART = $part: one of b32768, b16384, b32768-graphs, b16384-graphs, shapes, confirm" >&2
     exit 2 ;;
esac
folder=heavy-lean-$part
case "$part" in shapes|confirm) folder=heavy-lean-b32768-shapes ;; esac
out="$OUT/rehash/$part"
rm -rf "$OUT/rehash"
mkdir -p "$OUT/rehash"
source bench/session_steps.sh
tune_folder "rehash/$folder" "$out" "$strategies" "${ROUNDS:-3}" "${BUDGET_S:-400}" 40
rc=$?
if [ "$part" = confirm ]; then
  source bench/profile_pairs.sh
  profile_pairs "$OUT/rehash" heavy-rehash 32768 132,198,264,396,528,1056 3 \
    "${PROFILE_MIN:-1.3}" "launched resident"
fi
tar -C "$OUT" -cf "$OUT/rehash-$part.tar" rehash && rm -rf "$OUT/rehash"
exit $rc
