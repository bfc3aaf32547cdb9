#!/bin/bash
# Device command (issues 13 and 16, eighth session of 2026-12-02) on the lent nvidia-h200 (one GPU): the same collector
# and method as every earlier pass (gpu_job, CUPTI timer, cold L2, 10% re-measured share). First, three independent
# test sets, each in its own pass, SEALED: measured before any choice of the session and read only after the last one.
#   gemm_test8  gemm_triton_test8 (40 fresh configs)   attn_test5  triton_attention_test5 (12 fresh configs)
#   moe_test4   moe_test4 (12 fresh configs)
# Then training passes over more configs: triton_attention_wide5 (96 configs), moe_wide5 (120 configs, a continuous
# box wider than the test sets'). Triton configs compile in 15 processes while the GPU measures.
#   KERNELCAST_GIT_REV=<commit> LIMIT=580 bash benchmarks/results/collect_h200_20261202_s8seal.sh
NAME=kc1202s8 source benchmarks/results/device_common.sh
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test8,triton_attention_test5,moe_test4 --seed 1010 \
    --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
  python3 -m kernelcast.collect.precompile --sweeps triton_attention_wide5,moe_wide5 --seed 1010 \
    --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
measure gemm_test8 gemm_triton_test8 1010 100
measure attn_test5 triton_attention_test5 1010 70
measure moe_test4 moe_test4 1010 60
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure attn_wide5 triton_attention_wide5 1010 $(( $(budget 30) / 2 ))
measure moe_wide5 moe_wide5 1010 $(budget 25)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
