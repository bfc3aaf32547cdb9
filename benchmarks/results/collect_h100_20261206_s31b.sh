#!/bin/bash
# Device command prepared by the thirty-first session (2026-12-06) for the next H100 call: a second draw of masked SDPA
# over the whole box (attention_masked_box; the first, collect_h100_20261206_s31.sh, moved the H100 masked test sets
# most, RESULTS §49), then Triton GEMM over the one pool s30 opened on the H100 with 100 rows only (gemm_triton_wide5).
# Merge, list with role train, retrain attention and gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s31b.sh
FINISH_LOGS=tar
NAME=kc_s32 source benchmarks/results/device_common.sh
measure maskedbox2 attention_masked_box 1327 280
measure tritongemm5 gemm_triton_wide5 1315 $(budget 30)
finish
