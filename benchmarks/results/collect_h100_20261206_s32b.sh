#!/bin/bash
# Thirty-second session (2026-12-06), a warm follow-up on the H100 that ran collect_h100_20261206_s32.sh: the tenth
# Triton GEMM config pool (gemm_triton_wide10, pool_seed 311) drawn again with another seed.
#   KERNELCAST_GIT_REV=<commit> LIMIT=420 bash benchmarks/results/collect_h100_20261206_s32b.sh
FINISH_LOGS=tar
NAME=kc_s32b source benchmarks/results/device_common.sh
measure tritongemm10b gemm_triton_wide10 1332 $(budget 30)
finish
