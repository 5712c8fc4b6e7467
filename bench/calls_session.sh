#!/usr/bin/env bash
# Each batch's preprocessing calls replayed as CUDA graphs (RunSettings.preprocess_graphs,
# the default) against the calls one by one ("+calls"), strategy by strategy in the same
# rounds of one process. With OUT set by the device tool:
#   PART=heavy8192 bash bench/calls_session.sh   GPU tests, heavy b8192 (4 rounds), and
#                                                the host's calls at b8192
#   PART=more bash bench/calls_session.sh        kaggle and terabyte b4096 and b8192
#                                                eager (3 rounds), heavy b16384 (2 rounds)
# Returns $OUT/<part>.tar; render with python bench/render_repeats.py.
set -u
case "${PART:-heavy8192}" in
  heavy8192)
    NUMBA_ENABLE_CUDASIM=0 timeout 240 python -m pytest -q -p no:cacheprovider \
      tests/test_batch_graphs.py tests/test_launch.py tests/test_graphed.py \
      tests/test_sm_split.py 2>&1 | tail -4
    bash bench/heavy_rounds.sh calls_heavy8192 heavy_calls heavy 4 \
      ideal,gpu-sequential,gpu-sequential+calls,gpu-overlap,gpu-overlap+calls,corun,corun+calls \
      8192:200
    python bench/host_breakdown.py --out "$OUT/hb" -- --matrix heavy --batches 8192 \
      --strategies ideal,gpu-overlap,gpu-overlap+calls --iterations 200 > "$OUT/hb.log" 2>&1
    tail -3 "$OUT/hb.log"
    ;;
  more)
    ONLY=kaggle,terabyte bash bench/heavy_rounds.sh calls_plans4096 plans_calls plans 3 \
      ideal,gpu-sequential,gpu-sequential+calls,rap,rap+calls 4096:150
    ONLY=kaggle,terabyte bash bench/heavy_rounds.sh calls_plans8192 plans_calls plans 3 \
      ideal,gpu-sequential,gpu-sequential+calls,rap,rap+calls,corun,corun+calls 8192:150
    bash bench/heavy_rounds.sh calls_heavy16384 heavy_calls heavy 2 \
      ideal,gpu-overlap,gpu-overlap+calls,corun,corun+calls 16384:100
    ;;
  *) echo "PART: heavy8192 or more" >&2; exit 2 ;;
esac
