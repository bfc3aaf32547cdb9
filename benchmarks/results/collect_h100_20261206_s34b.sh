#!/bin/bash
# Device command of the thirty-fourth session (2026-12-06), its second call (asked of an H200, run on an H100): Triton
# GEMM over a twelfth config pool no GPU has timed (gemm_triton_wide12, pool_seed 313). At equal rows, the number of
# configs trained on bounds fresh-config error (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s34b.sh
FINISH_LOGS=tar
NAME=kc_s34 source benchmarks/results/device_common.sh
measure tritongemm12 gemm_triton_wide12 1334 $(budget 30)
finish
