#!/bin/bash
# Warm follow-up (thirty-seventh session, H100): three more bmm draws, then the masked SDPA box (sized for the
# H200: 666 of 1,702 rows out of memory on the 80 GB card).
#   KERNELCAST_GIT_REV=<commit> LIMIT=480 bash benchmarks/results/collect_h100_20261207_s37d.sh
FINISH_LOGS=tar
NAME=kc_s37i source benchmarks/results/device_common.sh
measure bmm3b gemm_cublas_bmm3 1332 60
measure bmm3c gemm_cublas_bmm3 1333 60
measure bmm3d gemm_cublas_bmm3 1334 60
measure maskedbox attention_masked_box 1325 $(budget 20)
finish
