#!/bin/bash
# Device command (issues 13 and 16, eighth session of 2026-12-02) on the lent nvidia-h200 (one GPU): training passes over
# more Triton configs, the same collector and method (gpu_job, CUPTI timer, cold L2, 10% re-measured share):
#   gemm_wide7  gemm_triton_wide7 (300 configs)   attn_wide6  triton_attention_wide6 (96)   moe_wide6  moe_wide6 (120)
# every pool drawn clear of the test sets' configs. Triton configs compile in 15 processes while the GPU measures.
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261202_s8train.sh
NAME=kc1202s8t source benchmarks/results/device_common.sh
( python3 -m kernelcast.collect.precompile --sweeps triton_attention_wide6,moe_wide6 --seed 1011 \
    --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
  python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide7 --seed 1011 \
    --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
sleep 45
measure attn_wide6 triton_attention_wide6 1011 90
measure moe_wide6 moe_wide6 1011 90
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure gemm_wide7 gemm_triton_wide7 1011 $(budget 25)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
