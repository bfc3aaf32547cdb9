#!/bin/bash
# Device command prepared by the forty-fourth session (2026-12-07) for the next H100 call. The H100's plain cuBLAS GEMMs
# read 3.27% median on their test set against <=3% (RESULTS §61), and the H100 has one draw of plain cuBLAS training
# shapes (gemm_cublas_wide at seed 1256, 11,289 rows) beside 19,052 bmm rows:
# 1. cuBLAS GEMM over the whole box (gemm_cublas_wide2: m to 64k, n/k to 128k, multiples of 8 and unaligned, every
#    dtype; ~6,000 descriptions), seed 1400;
# 2. gemm_cublas_wide at a second seed (1401), what the budget leaves.
# Merge each, check it against the H100's test files (shape_hash, config=False), list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=520 bash benchmarks/results/collect_h100_next_s44.sh (ran 2026-12-08 as this file)
FINISH_LOGS=tar
NAME=kc_s44n source benchmarks/results/device_common.sh
measure cublaswide2 gemm_cublas_wide2 1400 240
measure cublaswide gemm_cublas_wide 1401 $(budget 25)
finish
