#!/bin/bash
# Asked of an H200, run on an H100 (the first of the thirtieth session's two H100 calls): its rows were relabelled h100_sxm.
# Device command of the thirtieth session (2026-12-06), after its first H200 call (collect_h200_20261206_s30.sh): masked
# SDPA over every head_dim 32-256 in steps of 8 (attention_masked_wide2; the masked training rows held six dims, and
# the masked test set's 72/112/160/224 ran 0.89-0.92x of prediction). Merge, list with role train, retrain attention.
#   KERNELCAST_GIT_REV=<commit> LIMIT=200 bash benchmarks/results/collect_h200_next_s30b.sh
FINISH_LOGS=tar
NAME=kc_s30b source benchmarks/results/device_common.sh
measure maskedhd attention_masked_wide2 1320 $(budget 20)
finish
