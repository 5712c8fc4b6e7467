# Sourced by bench/rehash_session.sh and bench/assembly_stream_session.sh (not run on its
# own): `corun tune` of one folder under bench/plans/rehash/, its log kept beside it, the
# lines that say what it measured printed, the per-round files left out and the records
# gzipped for the trip back.
#   tune_folder FOLDER OUT STRATEGIES ROUNDS BUDGET_S LINES [corun tune flags...]
# OUT: the output folder (its log OUT.log); LINES: how many of the log's last lines to
# print. Returns corun tune's exit status.
tune_folder() {
  local folder=$1 out=$2 strategies=$3 rounds=$4 budget=$5 lines=$6 status=0
  shift 6
  python -m corun.cli tune "bench/plans/rehash/$folder" --strategies "$strategies" \
    --rounds "$rounds" --iterations 300 --warmup 20 --budget-s "$budget" "$@" \
    -o "$out" > "$out.log" 2>&1 || status=$?
  grep -vE "^ *(iteration|round)|compiling|preparing|batches and" "$out.log" | tail -"$lines"
  rm -rf "$out/rounds"
  gzip -9n "$out"/*.json 2>/dev/null
  return $status
}
