#!/usr/bin/env bash
# One lent H200, for the assemblies' own stream (backend/streams.py Streams.assembly).
#   PART=graphs (run 13): graphed heavy-rehash b16384, whose choice (132 blocks at
#     bottom_mlp_fwd, two ahead) had started its kernel 0.11 ms late in every other step
#     behind the previous batch's assembly (run 12, bench/results/rehash_h200.md), tuned
#     again with every runner-up; then graphed b32768's choice, which recovered the gap in
#     run 9, beside ideal and gpu-sequential, to see it keep that; then the GPU tests of
#     the graphed step, the batch graphs and the streams.
#   PART=eager (run 14): eager b32768's choice beside ideal and gpu-sequential (the
#     recovery target met in runs 4-7), then the eager b16384 folder with its runners-up.
#     Run 14 ran them with the assemblies on their own stream, then every step's default;
#     now the eager default queues them behind the kernels (RunSettings.assembly_stream).
#   PART=ab (run 15): eager b32768's and graphed b16384's choices, each with its
#     assemblies on their own stream and behind the kernels (corun execute
#     --assembly-stream own|behind), in ROUNDS rounds of turned order, beside each one's
#     ideal. Run 15 (ROUNDS=1, with the flag then named --assembly-behind-kernels) was cut
#     short by the device budget after the own-stream runs.
#   PART=matrix: the matrix as CUDA graphs (bench/matrix_head_session.sh
#     PART=graphs), one round, to see the Criteo-like plans keep 99.5-99.8% of ideal
#     with the graphed default then, the assemblies on their own stream (run 16).
#   PART=connections (run 17): the graphed kaggle and terabyte plans with their assemblies
#     on their own stream and behind the kernels (execute_gpu.py +own/+behind), with the
#     driver's 8 hardware queues and with 32 (CUDA_DEVICE_MAX_CONNECTIONS), then eager
#     b32768 both ways and graphed b16384 on its own stream with 32.
#   PART=tune (run 18): graphed b16384 and b32768 tuned with the chosen plan's other
#     assembly stream as a variant (corun tune's stream_variant).
# With OUT set by the device tool:
#   PART=graphs|eager|ab|matrix|connections|tune bash bench/assembly_stream_session.sh
# returns $OUT/assembly-stream-$PART.tar (raw records gzipped, logs).
set -u
part=${PART:-graphs}
root="$OUT/assembly-stream"
rm -rf "$root" && mkdir -p "$root"
rc=0

source bench/session_steps.sh
tune() {  # tune FOLDER OUTNAME STRATEGIES ROUNDS BUDGET_S [flags]: bench/session_steps.sh
  tune_folder "rehash/$1" "$root/$2" "$3" "$4" "$5" 16 "${@:6}" || rc=$?
}

ex() {  # ex NAME ARGS...: one corun execute (bench/session_steps.sh execute_one)
  execute_one "$root/$1" "${@:2}" || rc=$?
}
e=bench/plans/rehash/heavy-lean-b32768/plan.json
g=bench/plans/rehash/heavy-lean-b16384-graphs/plan.json

case "$part" in
graphs)
  PART=b16384-graphs ROUNDS=${ROUNDS:-2} BUDGET_S=${BUDGET_S:-200} OUT="$root" \
    bash bench/rehash_session.sh || rc=$?
  tune heavy-lean-b32768-graphs b32768-graphs ideal,gpu-sequential,corun 2 120 \
    --no-launch-steps --no-lead-variant
  NUMBA_ENABLE_CUDASIM=0 timeout 240 python -m pytest -q -x -p no:cacheprovider \
    tests/test_graphed.py tests/test_batch_graphs.py tests/test_sm_split.py \
    > "$root/gpu-tests.log" 2>&1 || rc=$?
  tail -3 "$root/gpu-tests.log"
  ;;
eager)
  tune heavy-lean-b32768 b32768 ideal,gpu-sequential,corun 2 150 \
    --no-launch-steps --no-lead-variant
  tune heavy-lean-b16384 b16384 ideal,gpu-sequential,corun,corun-2,corun-3,corun-4,corun-5 \
    1 120 --no-launch-steps --no-lead-variant
  ;;
ab)  # run 15: each choice with its assemblies on their own stream and behind the kernels
  ex eager-ideal --strategy ideal --model heavy-lean --pipeline heavy-rehash --batch 32768
  ex graphed-ideal --strategy ideal --model heavy-lean --pipeline heavy-rehash --batch 16384 \
    --cuda-graphs
  for r in $(seq 1 "${ROUNDS:-2}"); do
    if [ $r = 1 ]; then order="own behind"; else order="behind own"; fi
    for how in $order; do
      ex "eager-$how-$r" "$e" --assembly-stream "$how"
      ex "graphed-$how-$r" "$g" --assembly-stream "$how"
    done
  done
  gzip -9n "$root"/*.json 2>/dev/null
  ;;
matrix)
  python bench/execute_gpu.py --matrix graphs --strategies ideal,gpu-sequential,rap,corun \
    --repeats 1 --budget-s 300 --out "$root/matrix-graphs" > "$root/matrix-graphs.log" 2>&1 \
    || rc=$?
  tail -30 "$root/matrix-graphs.log"
  gzip -9n "$root"/matrix-graphs/*.json 2>/dev/null
  ;;
connections)  # run 17: the assembly stream with 32 hardware queues, not the driver's 8
  matrix() {  # matrix NAME: kaggle and terabyte graphed, the assemblies own and behind
    python bench/execute_gpu.py --matrix graphs --only kaggle,terabyte \
      --strategies ideal,gpu-sequential,corun+own,corun+behind --repeats 2 --budget-s 100 \
      --out "$root/$1" > "$root/$1.log" 2>&1 || rc=$?
    grep -E "^===|ms, " "$root/$1.log" | paste - - | awk '{print $2, $3, $4, $5}'
    gzip -9n "$root/$1"/*.json 2>/dev/null
  }
  matrix matrix-queues8
  export CUDA_DEVICE_MAX_CONNECTIONS=32
  matrix matrix-queues32
  ex eager-ideal-q32 --strategy ideal --model heavy-lean --pipeline heavy-rehash --batch 32768
  ex eager-own-q32 "$e" --assembly-stream own
  ex eager-behind-q32 "$e" --assembly-stream behind
  ex graphed-own-q32 "$g" --assembly-stream own
  gzip -9n "$root"/*.json 2>/dev/null
  ;;
tune)  # run 18: corun tune with the chosen plan's stream variant (tune_cmd.stream_variant)
  tune heavy-lean-b16384-graphs b16384-graphs ideal,gpu-sequential,corun 2 90 \
    --no-launch-steps --no-lead-variant
  tune heavy-lean-b32768-graphs b32768-graphs ideal,gpu-sequential,corun 2 110 \
    --no-launch-steps --no-lead-variant
  ;;
*) echo "PART = $part: one of graphs, eager, ab, matrix, connections, tune" >&2; exit 2 ;;
esac
tar -C "$OUT" -cf "$OUT/assembly-stream-$part.tar" assembly-stream && rm -rf "$root"
exit $rc
