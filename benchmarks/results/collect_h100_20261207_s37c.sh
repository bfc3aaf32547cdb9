#!/bin/bash
# Warm follow-up (thirty-seventh session, H100): the H200 queue's cuBLAS bmm pass (gemm_cublas_bmm3, seed 1331) on
# the H100, whose cuBLAS picks its kernels for the same sm_90 with 132 SMs.
#   KERNELCAST_GIT_REV=<commit> LIMIT=300 bash benchmarks/results/collect_h100_20261207_s37c.sh
FINISH_LOGS=tar
NAME=kc_s37h source benchmarks/results/device_common.sh
measure bmm3 gemm_cublas_bmm3 1331 200
finish
