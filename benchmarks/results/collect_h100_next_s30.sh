#!/bin/bash
# Prepared by the twenty-ninth session (2026-12-06) for the next H100 call. Every H100 Triton row so far timed the same
# configs: gemm_triton_wide8's pool of 300 (pool_seed 309) and triton_attention_wide8's of 110, whatever the seed (a
# sweep's seed draws shapes, its pool_seed the configs), while the test sets time configs no training row has. This
# call times other pools on the H100: Triton GEMM over wide7's and wide6's (pool_seeds 308, 307) and Triton attention
# over wide7's (96 configs, pool_seed 107). Merge each, list with role train, retrain gemm and attention.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s30.sh
FINISH_LOGS=tar
NAME=kc_s30 source benchmarks/results/device_common.sh
measure tritongemm7 gemm_triton_wide7 1310 200
measure tritonatt7 triton_attention_wide7 1311 140
measure tritongemm6 gemm_triton_wide6 1312 $(budget 30)
finish
