#!/usr/bin/env bash
# A vocabulary beside heavy-lean's plain update, on one lent H200 (issue 6's heavy case):
# heavy-lean's graphed gap is 18-20% with the kernel hidden beside its 2.3 ms embedding
# update (82-93% recovered); heavy-hot's is 27% with about half recovered. Does a
# vocabulary lookup (bench/vocab_probe.py, heavy-small-vocab) widen heavy-lean's gap past
# 20% while the kernel still hides? Run from the repository root with $OUT set:
#   PART=probe bash bench/vocab_lean_session.sh   heavy-small beside heavy-lean (ideal,
#       gpu-sequential, the 198-block kernel at interaction_bwd two ahead) at b16384 for
#       this machine's reference; then heavy-small-vocab beside heavy-lean at b16384 and
#       b8192: the baselines and the one kernel at interaction_bwd and emb_bwd in several
#       launch shapes, two ahead (2 rounds)
# (The device tool returns few files: pack $OUT into one archive after it.)
set -u
stamp() { while IFS= read -r l; do echo "$(date +%T) $l"; done; }
nvidia-smi --query-gpu=index,name,clocks.sm,memory.used --format=csv
case "${PART:-probe}" in
probe)
  python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
    --strategies ideal,gpu-sequential,at:interaction_bwd+b198+ahead2 \
    --budget-s 60 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  python bench/vocab_probe.py --matrix vocab-lean --batches 16384,8192 --repeats 2 \
    --strategies ideal,gpu-sequential,at:interaction_bwd+b198+ahead2,at:interaction_bwd+b264+ahead2,at:interaction_bwd+b396+ahead2,at:emb_bwd+b264+ahead2,at:emb_bwd+b528+ahead2 \
    --budget-s 330 --out "$OUT" 2>&1 | grep -v "iteration" | stamp
  ;;
*)
  echo "PART must be probe" >&2
  exit 2
  ;;
esac
