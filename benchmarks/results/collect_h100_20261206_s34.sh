#!/bin/bash
# Device command prepared by the thirty-second session (2026-12-06), run by the thirty-fourth on an H100 (asked of an
# H200; collect_next_any.sh chose the H100 branch): Triton GEMM over an eleventh config pool no GPU has timed
# (gemm_triton_wide11, pool_seed 312). At equal rows, the number of configs trained on bounds fresh-config error
# (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s34.sh
FINISH_LOGS=tar
NAME=kc_s33 source benchmarks/results/device_common.sh
measure tritongemm11 gemm_triton_wide11 1333 $(budget 30)
finish
