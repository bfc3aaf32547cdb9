#!/bin/bash
# Device command prepared by the thirty-second session (2026-12-06) for the next H100 call: Triton GEMM over an eleventh
# config pool no GPU has timed (gemm_triton_wide11, pool_seed 312). At equal rows, the number of configs trained on
# bounds fresh-config error (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s33.sh
FINISH_LOGS=tar
NAME=kc_s33 source benchmarks/results/device_common.sh
measure tritongemm11 gemm_triton_wide11 1333 $(budget 30)
finish
