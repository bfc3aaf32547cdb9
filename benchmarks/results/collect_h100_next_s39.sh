#!/bin/bash
# Device command prepared by the thirty-ninth session (2026-12-07) for the next H100 call: Triton GEMM over a fifteenth
# config pool no GPU has timed (gemm_triton_wide15, pool_seed 316). At equal rows, the number of configs trained on
# bounds fresh-config error (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s39.sh
FINISH_LOGS=tar
NAME=kc_s39n source benchmarks/results/device_common.sh
measure tritongemm15 gemm_triton_wide15 1339 $(budget 30)
finish
