#!/bin/bash
# Device command prepared by the thirty-first session (2026-12-06) for the next H100 call: a third draw of masked SDPA
# over the whole box (attention_masked_box; its first two, collect_h100_20261206_s31.sh and …_s31b.sh, moved the H100
# masked test sets most, RESULTS §49), then Triton GEMM over a pool no GPU has timed (gemm_triton_wide9, the H200's
# next pool too). Merge, list with role train, retrain attention and gemm.
#   KERNELCAST_GIT_REV=<commit> LIMIT=540 bash benchmarks/results/collect_h100_20261206_s31c.sh
FINISH_LOGS=tar
NAME=kc_s32 source benchmarks/results/device_common.sh
measure maskedbox3 attention_masked_box 1328 200
measure tritongemm9 gemm_triton_wide9 1329 $(budget 30)
finish
