#!/bin/bash
# Prepared by the thirty-first session as collect_h100_next_s32.sh; run by the thirty-second (2026-12-06) on an H100.
# Triton GEMM: the ninth config pool's second draw (collect_h100_20261206_s31c.sh timed 1,900 rows of it) and a tenth
# pool no GPU had timed (gemm_triton_wide10, pool_seed 311). At equal rows, the number of configs trained on bounds
# fresh-config error (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s32.sh
FINISH_LOGS=tar
NAME=kc_s32 source benchmarks/results/device_common.sh
measure tritongemm9b gemm_triton_wide9 1330 200
measure tritongemm10 gemm_triton_wide10 1331 $(budget 30)
finish
