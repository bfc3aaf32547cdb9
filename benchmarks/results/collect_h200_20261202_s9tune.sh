#!/bin/bash
# Device command (issue 16, ninth session of 2026-12-02) on the lent nvidia-h200: a second config-search test set for
# Triton GEMM (gemm_triton_tune2: 50 fresh shapes x 60 fresh configs + Triton's short list, every pair measured),
# measured first and SEALED until the session's choices are made, then a config-search training pass
# (gemm_triton_tunetrain: 120 shapes x 64 configs, every pair measured). The test classes compile first (15
# processes), the training classes while the GPU measures the test set. Same collector and method (gpu_job, CUPTI,
# cold L2, 10% re-measured).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261202_s9tune.sh
NAME=kc1202s9t source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps gemm_triton_tune2 --seed 1013 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_tunetrain --seed 1013 --workers 14 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
measure gemm_tune2 gemm_triton_tune2 1013 150
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure gemm_tunetrain gemm_triton_tunetrain 1013 $(budget 15)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
