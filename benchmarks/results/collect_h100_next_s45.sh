#!/bin/bash
# Device command prepared by the forty-fifth session (2026-12-08) for the next H100 call. The H100's cuDNN SDPA set read
# 4.2% (target <=3%; its training holds three cuDNN draws, the last cut by its budget) and its Triton attention set 6.4%
# (target <=5%):
# 1. attention_cudnn_wide at a new seed (1409), 200 s;
# 2. Triton attention over triton_attention_wide6's pool at a new shape seed (1410), what the budget leaves.
# Merge each, check it against the H100's test files (shape_hash, config=False), list with role train, retrain attention.
#   KERNELCAST_GIT_REV=<commit> LIMIT=520 bash benchmarks/results/collect_h100_next_s45.sh
FINISH_LOGS=tar
NAME=kc_s45n source benchmarks/results/device_common.sh
measure cudnnwide4 attention_cudnn_wide 1409 200
measure tritonatt23 triton_attention_wide6 1410 $(budget 25)
finish
