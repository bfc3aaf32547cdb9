#!/bin/bash
# Device command prepared by the thirty-fourth session (2026-12-06) for the next H100 call: Triton GEMM over a
# thirteenth config pool no GPU has timed (gemm_triton_wide13, pool_seed 314). At equal rows, the number of configs
# trained on bounds fresh-config error (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s34.sh
FINISH_LOGS=tar
NAME=kc_s34c source benchmarks/results/device_common.sh
measure tritongemm13 gemm_triton_wide13 1335 $(budget 30)
finish
