#!/bin/bash
# Prepared by the thirty-seventh session as collect_h100_next_s37.sh; run by the thirty-ninth (asked of an H200, run on
# an H100; 4,000 of 7,664 planned rows in 504 s): Triton GEMM over a
# fourteenth config pool no GPU has timed (gemm_triton_wide14, pool_seed 315). At equal rows, the number of configs
# trained on bounds fresh-config error (RESULTS §46). Merge, list with role train, retrain gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261207_s39.sh
FINISH_LOGS=tar
NAME=kc_s37n source benchmarks/results/device_common.sh
measure tritongemm14 gemm_triton_wide14 1337 $(budget 30)
finish
