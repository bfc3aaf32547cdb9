#!/bin/bash
# Device command (issues 13 and 16, eighth session of 2026-12-02) on the lent nvidia-h200: a ninth Triton GEMM test set
# (40 fresh configs), measured first and SEALED, then a training pass over 300 more configs (gemm_triton_wide8); the
# test set is read once, after the retrain on that pass. The test classes compile first (15 processes), the training
# classes while the GPU measures the test set. Same collector and method (gpu_job, CUPTI, cold L2, 10% re-measured).
#   KERNELCAST_GIT_REV=<commit> LIMIT=560 bash benchmarks/results/collect_h200_20261202_s8gemm.sh
NAME=kc1202s8g source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test9 --seed 1012 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
( python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide8 --seed 1012 --workers 14 \
    --log "$W/precompile.jsonl" 2>> "$W/precompile.err" ) &
PRE=$!
measure gemm_test9 gemm_triton_test9 1012 90
wait $PRE
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure gemm_wide8 gemm_triton_wide8 1012 $(budget 15)
gpu_state
log "done, $(left)s left"
cp "$W/call.log" "$OUT/"
