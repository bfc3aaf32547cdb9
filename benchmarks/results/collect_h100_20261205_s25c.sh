#!/bin/bash
# The twenty-fifth session's third H100 call (2026-12-05): the H100's test rows of cuBLAS GEMM (h100test4), grouped
# GEMM, elementwise and reduction ops are answered by transfer from the H200 alone (6.1, 9.3-11.1, 7.5 and 6.5% median
# at the session's start). The H100 gets the training sweeps those families' H200 models learned from first:
# gemm_cublas_wide (seed 1256), gemm_grouped_wide (1257), elementwise_wide (1258), reduction_wide (1259); each
# budget-cut (plans are shuffled: a cut sweep is a uniform subset).
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s25c.sh
FINISH_LOGS=tar
NAME=kc_s25c source benchmarks/results/device_common.sh
measure cublaswide gemm_cublas_wide 1256 200
measure groupedwide gemm_grouped_wide 1257 80
measure eltwide elementwise_wide 1258 90
measure redwide reduction_wide 1259 $(budget 40)
finish
