#!/bin/bash
# Warm follow-up (thirty-seventh session, H100): two more bmm draws, then masked SDPA at every head_dim.
#   KERNELCAST_GIT_REV=<commit> LIMIT=270 bash benchmarks/results/collect_h100_20261207_s37e.sh
FINISH_LOGS=tar
NAME=kc_s37j source benchmarks/results/device_common.sh
measure bmm3e gemm_cublas_bmm3 1335 50
measure bmm3f gemm_cublas_bmm3 1336 50
measure maskedhd attention_masked_wide2 1322 $(budget 15)
finish
