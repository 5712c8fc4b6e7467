# Sourced by the device session scripts (bench/rehash_session.sh,
# bench/assembly_stream_session.sh, bench/sm_cap_session.sh; not run on its own): the
# steps they share, each with its log kept beside its output and a few lines printed.
#
#   tune_folder FOLDER OUT STRATEGIES ROUNDS BUDGET_S LINES [corun tune flags...]
# `corun tune` of one folder under bench/plans/ (rehash/NAME, capped/NAME): OUT the output folder (its log
# OUT.log); LINES: how many of the log's last lines to print; the per-round files left
# out and the records gzipped for the trip back. Returns corun tune's exit status.
tune_folder() {
  local folder=$1 out=$2 strategies=$3 rounds=$4 budget=$5 lines=$6 status=0
  shift 6
  python -m corun.cli tune "bench/plans/$folder" --strategies "$strategies" \
    --rounds "$rounds" --iterations 300 --warmup 20 --budget-s "$budget" "$@" \
    -o "$out" > "$out.log" 2>&1 || status=$?
  grep -vE "^ *(iteration|round)|compiling|preparing|batches and" "$out.log" | tail -"$lines"
  rm -rf "$out/rounds"
  gzip -9n "$out"/*.json 2>/dev/null
  return $status
}

#   execute_one OUT [corun execute arguments...]
# One `corun execute` of 300 timed iterations after 20, written to OUT.json (its log
# OUT.log); prints its mean iteration (the throughput's), its median step and each
# stage's median. Returns corun execute's exit status.
execute_one() {
  local out=$1 status=0
  shift
  python -m corun.cli execute "$@" --iterations 300 --warmup 20 --quiet \
    -o "$out.json" > "$out.log" 2>&1 || { status=$?; tail -3 "$out.log"; }
  python -c "import json,sys; m=json.load(open(sys.argv[1])); s=m['stages']; \
print(sys.argv[2], 'ms/iteration', round(1e3 * m['batch_per_gpu'] * m['gpu_count'] \
/ m['throughput_samples_per_s'], 3), 'median', round(m['iteration']['median_ms'], 3), \
'p10-p90', round(m['iteration']['p10_ms'], 2), round(m['iteration']['p90_ms'], 2), \
{k: round(v['median_ms'], 3) for k, v in s.items()})" "$out.json" "$(basename "$out")" \
    2>/dev/null
  return $status
}
