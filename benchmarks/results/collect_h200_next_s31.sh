#!/bin/bash
# Device command prepared by the thirtieth session (2026-12-06) for the next H200 call: masked SDPA over the whole box
# (attention_masked_box: seq_q and seq_kv drawn apart, calls to 150 GFLOP) and over every head_dim 32-256 in steps of 8
# (attention_masked_wide2; the H200's masked training rows hold six dims, and the masked test
# set's 72/112/160/224 ran 0.89-0.92x of prediction; the H100 measured this sweep in collect_h100_20261206_s30b.sh),
# then Triton GEMM over a pool no GPU has timed (gemm_triton_wide9, pool_seed 310). Merge each, list with role train,
# retrain attention and gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h200_next_s31.sh
FINISH_LOGS=tar
NAME=kc_s31 source benchmarks/results/device_common.sh
measure maskedbox attention_masked_box 1325 150
measure maskedhd attention_masked_wide2 1322 200
measure tritongemm9 gemm_triton_wide9 1323 $(budget 30)
finish
