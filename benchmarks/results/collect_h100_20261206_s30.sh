#!/bin/bash
# Prepared by the twenty-ninth session (2026-12-06) for the next H100 call. Every H100 Triton GEMM row so far timed the
# same 300 configs, gemm_triton_wide8's pool (pool_seed 309), whatever the seed (a sweep's seed draws shapes, its
# pool_seed the configs), while the test sets time configs no training row has; at equal rows, 300 → 2,052 training
# configs took the H200's fresh-config error 11.2 → 9.4% (benchmarks/eval_config_diversity.py, RESULTS §46). This call
# times three other pools on the H100: wide7's, wide6's and wide5's (pool_seeds 308, 307, 306). Triton attention is
# left out: its config space (block_m, block_n, warps, stages) holds ~115 configs clear of the test sets, and the
# H100's 110 already cover most of it. Merge each, list with role train, retrain gemm.
#   GPU_NAME=H100 KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_next_s30.sh
FINISH_LOGS=tar
NAME=kc_s30 source benchmarks/results/device_common.sh
measure tritongemm7 gemm_triton_wide7 1310 170
measure tritongemm6 gemm_triton_wide6 1311 170
measure tritongemm5 gemm_triton_wide5 1312 $(budget 30)
finish
