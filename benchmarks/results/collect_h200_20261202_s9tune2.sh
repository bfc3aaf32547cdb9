#!/bin/bash
# Device command (issues 13 and 16, ninth session of 2026-12-02) on the lent nvidia-h200: a tenth Triton GEMM test set
# (gemm_triton_test10, 40 fresh configs), measured first and SEALED until the session's GEMM choices are made, then a
# second config-search training pass (gemm_triton_tunetrain2: 120 more shapes x 64 other configs, every pair measured).
# The test classes compile first (15 processes), the training classes while the GPU measures the test set. Same
# collector and method (gpu_job, CUPTI, cold L2, 10% re-measured).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261202_s9tune2.sh
NAME=kc1202s9u source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test10 --seed 1014 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_tunetrain2 --seed 1014 --workers 14 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
measure gemm_test10 gemm_triton_test10 1014 120
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure gemm_tunetrain2 gemm_triton_tunetrain2 1014 $(budget 15)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
