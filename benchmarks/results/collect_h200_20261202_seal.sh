#!/bin/bash
# Device command (issue 13, seventh session of 2026-12-02) on the lent nvidia-h200 (one GPU): the same collector and
# method as every earlier pass (gpu_job, CUPTI timer, cold L2, 10% re-measured share). First, five independent test
# sets, each in its own pass, SEALED: measured before any choice of the session and read only after the last one.
#   libs_test3   gemm_cublas_test3 + attention_test3 + reduction_test2 (cuBLAS, flash, cuDNN, torch reductions)
#   gemm_test6   gemm_triton_test6 (40 fresh configs)       attn_test3  triton_attention_test3 (12 fresh configs)
#   moe_test3    moe_test3 (12 fresh configs)
# Then training passes: attention_cudnn_wide (cuDNN alone), triton_attention_wide4 (prefill to 128k, tiny K/V, 64
# configs), moe_wide4 (120 configs). Triton configs compile in 15 processes while the GPU measures the libraries.
#   KERNELCAST_GIT_REV=<commit> LIMIT=580 bash benchmarks/results/collect_h200_20261202_seal.sh
NAME=kc1202s source benchmarks/results/device_common.sh
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test6,triton_attention_test3,moe_test3 --seed 1007 \
    --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
  python3 -m kernelcast.collect.precompile --sweeps triton_attention_wide4,moe_wide4 --seed 1007 \
    --workers 15 --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
measure libs_test3 gemm_cublas_test3,attention_test3,reduction_test2 1007 130
measure gemm_test6 gemm_triton_test6 1007 100
measure attn_test3 triton_attention_test3 1007 80
measure moe_test3 moe_test3 1007 70
measure cudnn_wide attention_cudnn_wide 1007 $(budget 210)
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure attn_wide4 triton_attention_wide4 1007 $(( $(budget 30) / 2 ))
measure moe_wide4 moe_wide4 1007 $(budget 25)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/" 2>/dev/null
