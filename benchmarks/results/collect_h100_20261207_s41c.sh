#!/bin/bash
# The forty-first session's second warm follow-up (same H100): cuBLAS bmm over gemm_cublas_bmm3's box at seeds
# 1350-1353 (~15 s each), with the session's last device-seconds. Its call log holds the earlier calls' lines too.
#   KERNELCAST_GIT_REV=<commit> LIMIT=125 bash benchmarks/results/collect_h100_20261207_s41c.sh
FINISH_LOGS=tar; NAME=kc_s40n; source benchmarks/results/device_common.sh
measure_many bmm3x 24 gemm_cublas_bmm3:1350 gemm_cublas_bmm3:1351 gemm_cublas_bmm3:1352 gemm_cublas_bmm3:1353
finish
