#!/usr/bin/env bash
# Whether SMs of its own let the heavy kernel hide beside the embedding update (issue 6):
# graphed heavy-lean (the plain fused update, which waits on its hot rows' atomics) and
# heavy-hot (the hot-row update) at b16384, 2 rounds each, every ratio against ideal of
# the same command.
#   PART=static  the whole training stream on 132-N SMs, preprocessing on N ("+sm<N>",
#                RunSettings.preprocess_sms): what each stage costs on fewer SMs
#   PART=update  only the fused update on N SMs of its own ("+upd<N>",
#                RunSettings.update_sms), the kernel released with it on the rest
#   PART=all     both (the default)
# Usage, with OUT set by the device tool: PART=all bash bench/update_partition_session.sh
# Rendered: python bench/render_repeats.py $OUT/*/execute_*.json --pool -o REPORT.md
set -u
part=${PART:-all}
if [ "$part" = static ] || [ "$part" = all ]; then
  python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
    --strategies ideal,gpu-sequential,corun,ideal+sm24,ideal+sm32,ideal+sm40,ideal+sm48,at:emb_bwd+b96+sm24+ahead2,at:emb_bwd+b128+sm32+ahead2,at:emb_bwd+b160+sm40+ahead2,at:emb_bwd+b192+sm48+ahead2 \
    --budget-s 300 --out "$OUT/static" 2>&1 | grep -E "Error|error|wrote"
fi
if [ "$part" = update ] || [ "$part" = all ]; then
  python bench/execute_gpu.py --matrix heavy-lean-graphs --batches 16384 --repeats 2 \
    --strategies ideal,gpu-sequential,corun,ideal+upd92,ideal+upd84,ideal+ub6,at:emb_bwd+b160+upd92+ahead2,at:emb_bwd+b192+upd84+ahead2,at:emb_bwd+b224+upd76+ahead2,at:emb_bwd+b192+upd84,at:interaction_bwd+b160+upd92+ahead2 \
    --budget-s 300 --out "$OUT/update_lean" 2>&1 | grep -E "Error|error|wrote"
  python bench/execute_gpu.py --matrix heavy-short-graphs --batches 16384 --repeats 2 \
    --strategies ideal,gpu-sequential,corun,ideal+upd92,ideal+upd84,at:emb_bwd+b160+upd92+ahead2,at:emb_bwd+b192+upd84+ahead2 \
    --budget-s 150 --out "$OUT/update_hot" 2>&1 | grep -E "Error|error|wrote"
fi
