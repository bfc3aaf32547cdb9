#!/bin/bash
# The fortieth session's warm follow-ups of collect_h100_20261207_s40d.sh (same H100): cuBLAS bmm over the box eager
# attention launches it in (gemm_cublas_bmm3), draws the thirty-seventh session's seeds 1331-1336 did not take and the
# H200 queue's 1337 does not either: 1338 (25 s), then 1339-1345 (131 s); _s40f.sh drew 1346-1349 (79 s).
#   KERNELCAST_GIT_REV=<commit> LIMIT=215 bash benchmarks/results/collect_h100_20261207_s40e.sh
FINISH_LOGS=tar; NAME=kc_s40d; source benchmarks/results/device_common.sh
measure bmm3 gemm_cublas_bmm3 1338 $(budget 20)
for s in 1339 1340 1341 1342 1343 1344 1345; do measure bmm3s$s gemm_cublas_bmm3 $s 24; done
finish
