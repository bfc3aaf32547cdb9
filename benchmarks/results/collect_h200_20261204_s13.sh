#!/bin/bash
# Device command (issue 13, thirteenth session of 2026-12-04) on the lent nvidia-h200: two fresh independent test sets
# measured after the session's interval change (the intervals are the point model's error; RESULTS §28), to check its
# coverage and width on shapes and Triton configs no choice saw: an eleventh Triton GEMM set (gemm_triton_test11, 40
# fresh configs) and a fourth cuBLAS set (gemm_cublas_test4). Same collector and method (gpu_job, CUPTI, cold L2, 10%
# re-measured). The Triton classes compile on 15 processes first; the cuBLAS set needs none.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h200_20261204_s13.sh
NAME=kc1204s13 source benchmarks/results/device_common.sh
python3 -m kernelcast.collect.precompile --sweeps gemm_triton_test11 --seed 1015 --workers 15 \
  --log "$W/precompile.jsonl" 2>> "$W/precompile.err"
log "precompile $(grep precompile_done "$W/precompile.jsonl" | tr '\n' ' ')"
measure gemm_cublas_test4 gemm_cublas_test4 1016 60
measure gemm_test11 gemm_triton_test11 1015 $(budget 15)
finish
